"""What a client is answered is committed before the answer starts: the SQLite store's
group commit (writes of one loop turn in one transaction) must not let a response reach
the client while its writes are still uncommitted, invisible to another process (the
``accounts`` CLI, a second reader) and lost if the process died then."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from http_support import HUMAN, fast_config, running_app
from starlette.types import ASGIApp, Message

COUNT = "SELECT count(*) FROM interactions"
SUSPENDED = "SELECT suspended FROM accounts WHERE name = 'http-tests'"


async def answered(
    app: ASGIApp, key: str, path: str, body: dict[str, Any], probe: Callable[[], Any]
) -> tuple[int, Any]:
    """Calls ``app`` as a server would and runs ``probe`` the moment the response starts."""
    seen: dict[str, Any] = {}
    request = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive() -> Message:
        if request:
            return request.pop()
        (await asyncio.Event()).wait()  # the client stays connected
        raise AssertionError

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start" and not seen:
            seen["status"], seen["probe"] = message["status"], probe()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8765"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {key}".encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }
    await app(scope, receive, send)
    return seen["status"], seen["probe"]


def read(db_path: Path, query: str) -> Any:
    with sqlite3.connect(db_path) as other:  # another connection, as another process
        row = other.execute(query).fetchone()
    return row[0] if row else None


async def test_a_send_and_a_suspension_are_committed_before_their_answer(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "hw.db"
    config = fast_config(tmp_path, db_path=str(db_path), spam_recipients=2)
    async for service in running_app(config):
        status, seen = await answered(
            service.app,
            service.api_key,
            "/messages/sms",
            {"to": HUMAN, "message": "Hi"},
            lambda: read(db_path, COUNT),
        )
        assert (status, seen) == (200, 1)
        # The spam guard's suspension, answered 403 at once.
        text = {"to": "+12025550111", "message": "Buy now!"}
        assert (await answered(service.app, service.api_key, "/messages/sms", text, str))[0] == 200
        text["to"] = "+12025550112"
        status, seen = await answered(
            service.app, service.api_key, "/messages/sms", text, lambda: read(db_path, SUSPENDED)
        )
        assert (status, seen) == (403, 1)
