"""``humanwire accounts`` while two real ``humanwire serve`` replicas run on one PostgreSQL
schema: a rotated key, a suspension and a reinstatement hold on every replica from the
next request (nothing about an account is cached in a replica)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from replica_support import LoadBalancer, Replica, replicas

from humanwire.cli import main
from humanwire.server.store import open_store

HUMAN = "+12025550100"


@pytest.fixture
def pair(database: str, tmp_path: Path) -> Iterator[list[Replica]]:
    key = f"hw_replicas_{uuid.uuid4().hex}"
    with replicas(database, 2, tmp_path / "home", key) as started:
        yield started


def account_of(database: str, key: str) -> str:
    async def look_up() -> str:  # a loop of its own, as the CLI these tests run
        store = open_store(database)
        try:
            record = await store.account_by_key_hash(hashlib.sha256(key.encode()).hexdigest())
            assert record is not None
            return record.id
        finally:
            await store.close()

    return asyncio.run(look_up())


def status_on(replica: Replica | LoadBalancer, key: str, path: str = "/numbers") -> int:
    with httpx.Client(
        base_url=replica.base_url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
        trust_env=False,
    ) as http:
        if path == "send":
            return http.post("/messages/sms", json={"message": "Ready?", "to": HUMAN}).status_code
        return http.get(path).status_code


def test_a_rotated_key_holds_at_once_on_every_replica(
    pair: list[Replica], database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    old = pair[0].api_key
    assert [status_on(replica, old) for replica in pair] == [200, 200]
    assert main(["accounts", "rotate-key", account_of(database, old), "--db", database]) == 0
    new = capsys.readouterr().out.strip()
    # The very next request, on each replica and through the balancer (both in turn).
    assert [status_on(replica, old) for replica in pair] == [401, 401]
    assert [status_on(replica, new) for replica in pair] == [200, 200]
    balancer = LoadBalancer(pair)
    try:
        assert [status_on(balancer, old, "send") for _ in range(4)] == [401] * 4
        assert [status_on(balancer, new, "send") for _ in range(4)] == [200] * 4
        assert sorted(set(balancer.routed)) == ["A", "B"]
    finally:
        balancer.close()


def test_suspend_and_reinstate_hold_at_once_on_every_replica(
    pair: list[Replica], database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = pair[0].api_key
    ident = account_of(database, key)
    assert [status_on(replica, key, "send") for replica in pair] == [200, 200]
    assert main(["accounts", "suspend", ident, "--db", database]) == 0
    assert [status_on(replica, key, "send") for replica in pair] == [403, 403]
    assert [status_on(replica, key) for replica in pair] == [403, 403]
    assert main(["accounts", "reinstate", ident, "--db", database]) == 0
    assert [status_on(replica, key, "send") for replica in pair] == [200, 200]
    capsys.readouterr()


def test_an_inbox_login_holds_on_every_replica_until_it_ends(
    pair: list[Replica], database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = pair[0].api_key
    first, second = (
        httpx.Client(base_url=replica.base_url, timeout=30, trust_env=False) for replica in pair
    )
    with first, second:
        login = first.post("/inbox/login", data={"key": key})
        assert login.status_code == 303
        # The session is in the database: the other replica knows the same cookie.
        for name in ("hw_inbox_session", "hw_csrf"):
            second.cookies.set(name, first.cookies[name], path="/inbox")
        assert [c.get("/inbox").status_code for c in (first, second)] == [200, 200]
        # A logout on one ends it on both.
        out = second.post("/inbox/logout", data={"csrf": first.cookies["hw_csrf"]})
        assert out.status_code == 303
        assert first.get("/inbox").headers["location"].startswith("/inbox/login")
        # A rotated key ends every session it opened, on every replica.
        assert first.post("/inbox/login", data={"key": key}).status_code == 303
        assert first.get("/inbox").status_code == 200
        assert main(["accounts", "rotate-key", account_of(database, key), "--db", database]) == 0
        capsys.readouterr()
        assert first.get("/inbox").headers["location"].startswith("/inbox/login")
