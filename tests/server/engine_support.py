"""Helpers for the engine tests: a fast engine on a temporary SQLite file, requests with
sub-second windows (the wire models only accept whole seconds from 1, the engine takes
any float), and a tiny real webhook receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from humanwire.server.config import ServiceConfig
from humanwire.server.engine import Account, Engine
from humanwire.types import (
    SandboxDelivery,
    SandboxReplyRequest,
    SlackMessageRequest,
    SMSFormRequest,
    SMSMessageRequest,
    WhatsAppMessageRequest,
)
from pg_support import STORES, store_database

HUMAN = "+12025550100"
OTHER_HUMAN = "+14155550123"
SLACK_HUMAN = "U0HUMAN0001"
PUBLIC_URL = "http://127.0.0.1:8765"

M = TypeVar("M")


def fast_config(tmp_path: Path, **changes: Any) -> ServiceConfig:
    config = ServiceConfig(
        db_path=str(tmp_path / "engine.db"),
        public_url=PUBLIC_URL,
        webhook_timeout=2.0,
        webhook_retry_base=0.05,
        webhook_max_attempts=4,
    )
    return replace(config, **changes)


@pytest.fixture(params=STORES)
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Engine]:
    """An engine on each store in turn: every test using it runs on SQLite and on
    PostgreSQL (a fresh schema, dropped afterwards)."""
    config = fast_config(tmp_path)
    with store_database(request.param, Path(config.db_path), "hw_engine") as db:
        instance = Engine(replace(config, db_path=db))
        await instance.start()
        try:
            yield instance
        finally:
            await instance.close()


@pytest.fixture
async def account(engine: Engine) -> Account:
    created, _key = await engine.accounts.create("tester")
    return created


def build(model: type[M], **values: Any) -> M:
    """A request with windows shorter than the wire allows: validated with whole
    seconds, then the windows replaced (the engine accepts any positive float)."""
    windows = {name: values.pop(name) for name in ("wait_time", "follow_up_time") if name in values}
    wire: dict[str, Any] = {
        name: (1 if value is not None else None) for name, value in windows.items()
    }
    instance = model.model_validate({**values, **wire})  # type: ignore[attr-defined]
    return instance.model_copy(update=windows)  # type: ignore[no-any-return]


def sms(message: str = "Deploy to prod?", to: str = HUMAN, **windows: Any) -> SMSMessageRequest:
    return build(SMSMessageRequest, message=message, to=to, **windows)


def whatsapp(message: str = "Deploy?", to: str = HUMAN, **windows: Any) -> WhatsAppMessageRequest:
    return build(WhatsAppMessageRequest, message=message, to=to, **windows)


def slack(message: str = "Deploy?", to: str = SLACK_HUMAN, **windows: Any) -> SlackMessageRequest:
    return build(SlackMessageRequest, message=message, to=to, **windows)


FIELDS = [
    {"id": "name", "label": "Name", "type": "text", "required": True},
    {"id": "ok", "label": "Approve", "type": "checkbox"},
]


def sms_form(to: str = HUMAN, **windows: Any) -> SMSFormRequest:
    return build(SMSFormRequest, title="Approval", fields=FIELDS, to=to, **windows)


def reply(
    channel: str, sender: str, to: str, body: str, interaction_id: str | None = None
) -> SandboxReplyRequest:
    data: dict[str, Any] = {"channel": channel, "from": sender, "to": to, "body": body}
    if interaction_id is not None:
        data["interactionId"] = interaction_id
    return SandboxReplyRequest.model_validate(data)


async def next_delivery(
    engine: Engine, account: Account, after: str | None = None, timeout: float = 2.0
) -> SandboxDelivery:
    """The newest delivery, waiting (event-driven) for one newer than ``after``."""
    await engine.wait_for_delivery(account, after, timeout)
    deliveries = await engine.list_sandbox_deliveries(account)
    assert deliveries, "nothing was delivered"
    assert deliveries[0].id != after, "no new delivery arrived"
    return deliveries[0]


async def eventually(check: Any, timeout: float = 3.0, step: float = 0.02) -> None:
    """For outcomes of background work (the outbox worker); fails after ``timeout``.
    ``check`` may be a coroutine function (one that reads the store)."""

    async def checked() -> Any:
        found = check()
        return await found if inspect.isawaitable(found) else found

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            if await checked():
                return
        except AssertionError:
            pass
        if asyncio.get_running_loop().time() > deadline:
            assert await checked(), "condition not met in time"
            return
        await asyncio.sleep(step)


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A raw HTTP/1.1 responder on 127.0.0.1: records each POST, answers ``status``."""

    status: int = 200
    requests: list[ReceivedRequest] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def start(self, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.requests.append(ReceivedRequest(path, headers, body))
            status_line = f"HTTP/1.1 {self.status} X\r\n"
            writer.write(status_line.encode() + b"content-length: 2\r\nconnection: close\r\n\r\nok")
            await writer.drain()
        finally:
            writer.close()
