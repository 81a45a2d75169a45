"""The real app in-process for the HTTP tests: ``create_app`` around a real engine on each
store in turn (the ``database`` fixture: a temporary SQLite file, then a fresh PostgreSQL
schema), its lifespan run, and an ``httpx.AsyncClient`` speaking ASGI to it (no socket,
but every byte goes through the app as over the network)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from humanwire.server.config import ServiceConfig
from humanwire.server.engine import Engine
from humanwire.server.http.app import create_app
from humanwire.types import ErrorBody

BASE_URL = "http://127.0.0.1:8765"
HUMAN = "+12025550100"
SLACK_HUMAN = "U0HUMAN0001"


def fast_config(tmp_path: Path, **changes: Any) -> ServiceConfig:
    """Short windows and retries: the machine is shared."""
    config = ServiceConfig(
        db_path=str(tmp_path / "hw.db"),
        public_url=BASE_URL,
        webhook_timeout=2.0,
        webhook_retry_base=0.05,
        webhook_max_attempts=3,
    )
    return replace(config, **changes)


@dataclass
class AppUnderTest:
    app: Starlette
    engine: Engine
    config: ServiceConfig
    api_key: str
    client: httpx.AsyncClient
    """Sends the account's bearer key on every request."""

    def anonymous(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(self.app), base_url=BASE_URL)

    async def new_account(self, name: str) -> httpx.AsyncClient:
        _account, key = await self.engine.accounts.create(name)
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(self.app),
            base_url=BASE_URL,
            headers={"Authorization": f"Bearer {key}"},
        )

    async def deliveries(self) -> list[dict[str, Any]]:
        response = await self.client.get("/sandbox/messages")
        assert response.status_code == 200, response.text
        body: list[dict[str, Any]] = response.json()
        return body


async def running_app(config: ServiceConfig) -> AsyncIterator[AppUnderTest]:
    engine = Engine(config)
    app = create_app(config, engine=engine)
    async with app.router.lifespan_context(app):
        _account, key = await engine.accounts.create("http-tests")
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app),
            base_url=BASE_URL,
            headers={"Authorization": f"Bearer {key}"},
        ) as client:
            yield AppUnderTest(app, engine, config, key, client)


@pytest.fixture(name="svc")
async def svc_fixture(tmp_path: Path, database: str) -> AsyncIterator[AppUnderTest]:
    async for service in running_app(fast_config(tmp_path, db_path=database)):
        yield service


_ANY_FIELD = "<any field>"


def assert_error(
    response: httpx.Response, status: int, code: str, field: str | None = _ANY_FIELD
) -> dict[str, Any]:
    """The documented error body with this status and code (and ``field`` when given)."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "field"}, body
    detail = ErrorBody.model_validate(body).error
    assert detail.code == code, body
    assert detail.message, body
    if field != _ANY_FIELD:
        assert detail.field == field, body
    error: dict[str, Any] = body["error"]
    return error
