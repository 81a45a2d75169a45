"""Unit-test helpers: a scripted ``httpx.MockTransport`` and clients in both modes.

Tests written once run against the sync and the async client: ``await call(x)`` awaits
``x`` only when the client is async.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from humanwire import AsyncHumanWire, HumanWire

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]

BASE_URL = "http://127.0.0.1:9"
API_KEY = "hw_test_key"


@dataclass
class Script:
    """Answers requests from a list, in order; the last answer repeats."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[httpx.Request] = field(default_factory=list)
    sleeps: list[float] = field(default_factory=list)

    def reply(self, *replies: Reply) -> Script:
        self.replies = list(replies)
        return self

    def handle(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        if not self.replies:
            return httpx.Response(200, json={})
        answer = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(answer, Exception):
            if isinstance(answer, httpx.RequestError):
                answer._request = request
            raise answer
        if callable(answer) and not isinstance(answer, httpx.Response):
            return answer(request)
        return answer

    # -- reading what was sent -----------------------------------------------------
    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]

    def body(self, index: int = -1) -> Any:
        content = self.requests[index].content
        return json.loads(content) if content else None

    def keys(self) -> list[str | None]:
        return [r.headers.get("Idempotency-Key") for r in self.requests]

    def read_timeouts(self) -> list[float | None]:
        return [r.extensions["timeout"]["read"] for r in self.requests]


def error(
    status: int,
    code: str,
    message: str = "nope",
    field: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "field": field}}
    return httpx.Response(status, json=body, headers=headers)


def ok(body: Any = None, status: int = 200) -> httpx.Response:
    if body is None:
        return httpx.Response(status)
    return httpx.Response(status, json=body)


def make_client(mode: str, script: Script, **options: Any) -> HumanWire | AsyncHumanWire:
    transport = httpx.MockTransport(script.handle)
    if mode == "sync":
        return HumanWire(
            API_KEY,
            BASE_URL,
            http_client=httpx.Client(transport=transport),
            sleep=script.sleeps.append,
            **options,
        )

    async def sleep(seconds: float) -> None:
        script.sleeps.append(seconds)

    return AsyncHumanWire(
        API_KEY,
        BASE_URL,
        http_client=httpx.AsyncClient(transport=transport),
        sleep=sleep,
        **options,
    )


async def call(result: Any) -> Any:
    """The result of a client call, awaited when the client is async."""
    if inspect.isawaitable(result):
        return await result
    return result


async def raises(exc_type: type[BaseException], thunk: Callable[[], Any]) -> Any:
    """Assert that a client call raises ``exc_type`` (at call time or when awaited)."""
    with pytest.raises(exc_type) as info:
        await call(thunk())
    return info.value


MESSAGE_REPLY = {
    "interactionId": "6f1c7a9e-2b6e-4d3a-9a52-0d7c1c1f0a11",
    "status": "ended",
    "responded": True,
    "response": "Human response: yes",
}
