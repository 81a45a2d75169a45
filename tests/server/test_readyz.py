"""``GET /readyz`` over real HTTP on both stores: ready when the database answers and its
schema is this code's; 503 naming the failing check when the schema is behind or the
database cannot be reached, and while the service stops. ``/healthz`` keeps its shape."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from http_support import AppUnderTest, assert_error, svc_fixture
from test_http_openapi import assert_conforms

from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from pg_support import DATABASE_URL, drop_schema, new_schema

__all__ = ["svc_fixture"]


@pytest.fixture
def runner(database: str) -> Iterator[ServiceRunner]:
    service = ServiceRunner(fast_config(database), "127.0.0.1", 0)
    service.start()
    try:
        yield service
    finally:
        service.stop()


def readyz(base_url: str) -> httpx.Response:
    return httpx.get(f"{base_url}/readyz", trust_env=False, timeout=20)


def test_ready_without_a_key_on_each_store(runner: ServiceRunner) -> None:
    response = readyz(runner.base_url)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["status"] == "ready"
    # No provider configured: the sandbox carries every channel, nothing to check there.
    assert set(body["checks"]) == {"accepting", "database", "migrations"}
    assert all(check["ok"] for check in body["checks"].values()), body
    assert_conforms(response, "/readyz")
    # /healthz is unchanged: alive, same shape as before.
    health = httpx.get(f"{runner.base_url}/healthz", trust_env=False)
    assert health.json() == {"status": "ok"}


def _put_schema_behind(database: str) -> None:
    """What an older humanwire left, or a migration not applied: the schema's recorded
    version is behind this code's."""
    if database.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute("DELETE FROM schema_migrations WHERE version = 2")
    else:
        with sqlite3.connect(database) as conn:
            conn.execute("DELETE FROM schema_migrations WHERE version = 2")


def test_a_schema_behind_is_not_ready_and_says_so(runner: ServiceRunner, database: str) -> None:
    assert readyz(runner.base_url).status_code == 200
    _put_schema_behind(database)
    response = readyz(runner.base_url)
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1"
    body = response.json()
    assert body["status"] == "not_ready"
    checks = body["checks"]
    assert checks["database"]["ok"] is True
    assert checks["migrations"]["ok"] is False
    assert "schema version(s) 2 not applied" in checks["migrations"]["detail"]
    assert checks["accepting"]["ok"] is True
    assert_conforms(response, "/readyz")
    # The API itself still answers: readiness is advice to the load balancer.
    assert httpx.get(f"{runner.base_url}/healthz", trust_env=False).status_code == 200


class _Proxy:
    """A TCP forwarder in front of PostgreSQL that a test can cut: every connection
    through it is closed and new ones are refused, as when the database host goes away."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.listener.close()
        with self.lock:
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


def test_an_unreachable_postgresql_is_not_ready(tmp_path: Path) -> None:
    parts = urlsplit(DATABASE_URL)
    proxy = _Proxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    schema, url = new_schema("hw_ready")
    through = urlsplit(url)
    netloc = through.netloc.replace(f"{through.hostname}:{through.port}", f"127.0.0.1:{proxy.port}")
    proxied = urlunsplit(through._replace(netloc=netloc))
    service = ServiceRunner(fast_config(proxied), "127.0.0.1", 0)
    service.start()
    try:
        assert readyz(service.base_url).status_code == 200
        proxy.cut()
        response = readyz(service.base_url)
        assert response.status_code == 503, response.text
        checks = response.json()["checks"]
        assert checks["database"]["ok"] is False
        detail = checks["database"]["detail"]
        assert detail.startswith(("query failed:", "no answer within")), detail
        assert checks["migrations"] == {
            "ok": False,
            "detail": "not checked: the database did not answer",
        }
        assert_conforms(response, "/readyz")
        # Liveness is another question: the process still answers.
        assert httpx.get(f"{service.base_url}/healthz", trust_env=False).status_code == 200
    finally:
        service.stop()
        drop_schema(schema)


async def test_stopping_is_not_ready_in_the_same_shape(svc: AppUnderTest) -> None:
    async with svc.anonymous() as anonymous:
        assert (await anonymous.get("/readyz")).status_code == 200
        svc.engine.drain()
        response = await anonymous.get("/readyz")
        health = await anonymous.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not_ready"
    assert body["checks"]["accepting"] == {"ok": False, "detail": "the service is stopping"}
    assert body["checks"]["database"]["ok"] is True
    assert_conforms(response, "/readyz")
    # /healthz keeps its stopping answer: the 503 error of every other endpoint.
    assert_error(health, 503, "unavailable")


async def test_concurrent_probes_share_one_database_question(svc: AppUnderTest) -> None:
    calls: list[float] = []
    store: Any = svc.engine.store
    original = store.pending_migrations

    async def counted() -> list[int]:
        calls.append(0)
        await asyncio.sleep(0.3)  # a slow database: the probes arriving meanwhile wait with it
        return list(await original())

    store.pending_migrations = counted
    async with svc.anonymous() as anonymous:
        answers = await asyncio.gather(*(anonymous.get("/readyz") for _ in range(20)))
    assert {answer.status_code for answer in answers} == {200}
    assert len(calls) == 1


def test_readyz_takes_no_query(runner: ServiceRunner) -> None:
    response = httpx.get(f"{runner.base_url}/readyz?verbose=1", trust_env=False)
    assert_error(response, 400, "invalid_request", "verbose")
