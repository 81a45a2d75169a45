"""``signed_route``, the guard of every provider route, on a route of its own: what the
verifier refuses or chokes on is 403, what the parser refuses or chokes on is 400, each
one log line without a traceback, and the handler sees only verified, parsed requests.
(Slack's and Twilio's routes are swept over loopback in
``tests/providers/test_provider_route_sweep.py``.)"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from humanwire.server.delivery.provider_routes import (
    Malformed,
    Unverified,
    form_params,
    json_value,
    signed_route,
)


class HeaderEquals:
    """Verified when ``X-Test-Signature`` is ``good``; raises on ``choke``."""

    header = "X-Test-Signature"

    def verify(self, request: Request, body: bytes) -> None:
        signature = request.headers.get(self.header, "")
        if signature == "choke":
            int(signature)  # a verifier that raises on garbage instead of refusing it
        if signature != "good":
            raise Unverified("missing or invalid X-Test-Signature")


def parse(request: Request, body: bytes) -> dict[str, Any]:
    if body == b"choke":
        raise RecursionError("maximum recursion depth exceeded")
    value = json_value(body)
    if not isinstance(value, dict):
        raise Malformed("the body is not a JSON object")
    if "name" in value and not isinstance(value["name"], str):
        raise Malformed("name must be a string", field="name")
    return value


seen: list[dict[str, Any]] = []


async def handler(request: Request, parsed: dict[str, Any]) -> Response:
    seen.append(parsed)
    return JSONResponse({"ok": True})


@pytest.fixture
def client() -> httpx.AsyncClient:
    seen.clear()
    route = signed_route(
        "/providers/test/hook", handler, provider="test", verifier=HeaderEquals(), parse=parse
    )
    app = Starlette(routes=[route])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://test")


def _error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "field"}
    return dict(body["error"])


async def test_refusals_are_403_or_400_with_one_line_each(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="humanwire")
    cases: list[tuple[str | None, bytes, int, str | None, int]] = [
        (None, b"{}", 403, None, logging.INFO),
        ("bad", b"{}", 403, None, logging.INFO),
        ("choke", b"{}", 403, None, logging.WARNING),
        ("good", b"[" * 50_000, 400, None, logging.INFO),
        ("good", b"\xff\xfe", 400, None, logging.INFO),
        ("good", b'{"name": 5}', 400, "name", logging.INFO),
        ("good", b"choke", 400, None, logging.WARNING),
    ]
    async with client:
        for signature, body, status, field, level in cases:
            caplog.clear()
            headers = {"X-Test-Signature": signature} if signature else {}
            response = await client.post("/providers/test/hook", content=body, headers=headers)
            assert response.status_code == status, (signature, body[:10])
            error = _error(response)
            assert error["code"] == ("forbidden" if status == 403 else "invalid_request")
            assert error["field"] == field
            [line] = caplog.records
            assert (line.name, line.levelno, line.exc_info) == ("humanwire.providers", level, None)
            assert "/providers/test/hook refused" in line.getMessage()
        assert seen == []
        accepted = await client.post(
            "/providers/test/hook",
            content=b'{"name": "a\\u0000b"}',
            headers={"X-Test-Signature": "good"},
        )
        assert accepted.json() == {"ok": True}
    assert seen == [{"name": "ab"}]  # without the NUL PostgreSQL cannot store


def test_parsing_helpers() -> None:
    assert json_value('{"a": ["\\u0000x", {"k\\u0000": 1}]}') == {"a": ["x", {"k": 1}]}
    for raw in [b"[" * 50_000, b"\xff", b"{", b'"\\ud800"']:
        with pytest.raises(Malformed):
            json_value(raw)
    assert form_params(b"a=1&a=2&b=&c") == {"a": "2", "b": "", "c": ""}
    with pytest.raises(Malformed):
        form_params(b"a=\xff")
