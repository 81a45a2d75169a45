"""The inbox's login is a server-side session, over real loopback HTTP on each store: the
cookie holds an opaque token (never the API key), which a logout, a rotation of the key,
the deletion of the account or the expiry ends; ``Secure`` follows the public URL; and
the proxies trusted for ``X-Forwarded-*`` are the ``trusted_proxies`` setting's."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from humanwire.cli import main
from humanwire.server.config import ServiceConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from pg_support import stored_bytes

SESSION = "hw_inbox_session"


def config_for(database: str, **changes: Any) -> ServiceConfig:
    return replace(fast_config(Path("unused.db")), db_path=database, **changes)


@pytest.fixture
def service(database: str) -> Iterator[ServiceRunner]:
    with ServiceRunner(config_for(database), "127.0.0.1", 0) as runner:
        yield runner


def browser(runner: ServiceRunner) -> httpx.Client:
    """A cookie-keeping client, as a browser is, on the socket itself (plain http)."""
    return httpx.Client(base_url=runner.bound_url, trust_env=False, timeout=30)


def set_cookies(response: httpx.Response) -> dict[str, str]:
    """Each ``Set-Cookie`` of the response by cookie name (the whole header line)."""
    return {line.split("=", 1)[0]: line for line in response.headers.get_list("set-cookie")}


def attributes(line: str) -> set[str]:
    return {part.strip().lower() for part in line.split(";")[1:]}


def log_in(client: httpx.Client, key: str) -> httpx.Response:
    response = client.post("/inbox/login", data={"key": key, "next": "/inbox"})
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/inbox"
    return response


def csrf_of(client: httpx.Client) -> str:
    page = client.get("/inbox")
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


def with_cookies(runner: ServiceRunner, cookies: dict[str, str]) -> httpx.Client:
    """Another browser holding a copy of these cookies (as a stolen cookie would be)."""
    client = browser(runner)
    for name, value in cookies.items():
        client.cookies.set(name, value, path="/inbox")
    return client


def on_login_page(response: httpx.Response) -> bool:
    return response.status_code == 303 and response.headers["location"].startswith("/inbox/login")


def account_id(runner: ServiceRunner, key: str) -> str:
    account = runner.call(runner.engine.accounts.authenticate, key)
    assert account is not None
    return str(account.id)


def test_the_cookie_is_an_opaque_session_not_the_key(service: ServiceRunner, database: str) -> None:
    key = service.create_account("inbox")
    with browser(service) as client:
        response = log_in(client, key)
        lines = response.headers.get_list("set-cookie")
        assert lines and not any(key in line for line in lines)
        cookie = set_cookies(response)[SESSION]
        assert {"httponly", "samesite=strict", "path=/inbox"} <= attributes(cookie)
        assert f"max-age={12 * 3600}" in attributes(cookie)
        assert "secure" not in attributes(cookie)  # http://127.0.0.1 public URL
        token = client.cookies[SESSION]
        assert token != key and len(token) >= 43  # 32 random bytes, url-safe base64
        assert client.get("/inbox").status_code == 200

        # A first ?key= visit opens another session (a token of its own), key not in it.
        again = client.get(f"/inbox/channels?key={key}")
        assert again.status_code == 303 and again.headers["location"] == "/inbox/channels"
        assert not any(key in line for line in again.headers.get_list("set-cookie"))
        assert client.cookies[SESSION] not in (token, key)
        assert client.get("/inbox/channels").status_code == 200

    # The database holds the token's hash, never the token.
    stored = stored_bytes(database)
    assert token.encode() not in stored
    assert hashlib.sha256(token.encode()).hexdigest().encode() in stored


def test_a_cookie_holding_the_key_no_longer_opens_the_inbox(service: ServiceRunner) -> None:
    key = service.create_account("old browser")
    # What the inbox set before sessions: the key itself, in hw_inbox_key.
    with with_cookies(service, {"hw_inbox_key": key, "hw_csrf": "c"}) as old:
        page = old.get("/inbox")
        assert on_login_page(page)
        # The browser is told to drop the key it kept.
        dropped = set_cookies(page)["hw_inbox_key"]
        assert "max-age=0" in attributes(dropped) and key not in dropped
        action = old.post("/inbox/text", data={"csrf": "c", "body": "x", "from": "+1202"})
        assert action.status_code == 401
    # Nor does the key put in the new cookie's place.
    with with_cookies(service, {SESSION: key, "hw_csrf": "c"}) as forged:
        assert on_login_page(forged.get("/inbox"))
    # Nor anything else a client may send there: the login page, never an error.
    with browser(service) as anyone:
        for value in (b"x" * 4000, b"\xe9t\xe9", b'"quoted"', b"a=b"):
            page = anyone.get("/inbox", headers={"Cookie": b"hw_inbox_session=" + value})
            assert on_login_page(page), value
            refused = anyone.post(
                "/inbox/logout", headers={"Cookie": b"hw_inbox_session=" + value + b"; hw_csrf=c"}
            )
            assert refused.status_code == 401, value


def test_logout_ends_the_session_in_the_store(service: ServiceRunner) -> None:
    key = service.create_account("leaving")
    with browser(service) as client:
        log_in(client, key)
        csrf = csrf_of(client)
        copied = {SESSION: client.cookies[SESSION], "hw_csrf": client.cookies["hw_csrf"]}
        out = client.post("/inbox/logout", data={"csrf": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/inbox/login"
        assert "max-age=0" in attributes(set_cookies(out)[SESSION])
    # A copy of the cookie kept from before the logout opens nothing.
    with with_cookies(service, copied) as kept:
        assert on_login_page(kept.get("/inbox"))
        assert on_login_page(kept.get("/inbox/events"))
        text = {"csrf": copied["hw_csrf"], "channel": "sms", "from": "+12025550100", "body": "x"}
        assert kept.post("/inbox/text", data=text).status_code == 401
    # The key itself still logs in.
    with browser(service) as client:
        log_in(client, key)
        assert client.get("/inbox").status_code == 200


def test_rotating_the_key_or_deleting_the_account_ends_its_sessions(
    service: ServiceRunner, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = service.create_account("rotating")
    other_key = service.create_account("other")
    ident = account_id(service, key)
    with browser(service) as client, browser(service) as other:
        log_in(client, key)
        log_in(other, other_key)
        # The operator's command, on the database (as from another process).
        assert main(["accounts", "rotate-key", ident, "--db", database]) == 0
        new_key = capsys.readouterr().out.strip()
        assert on_login_page(client.get("/inbox"))
        assert other.get("/inbox").status_code == 200  # other accounts' sessions stay
        log_in(client, new_key)
        assert client.get("/inbox").status_code == 200

        assert main(["accounts", "delete", ident, "--yes", "--db", database]) == 0
        assert on_login_page(client.get("/inbox"))
        assert other.get("/inbox").status_code == 200


def test_a_session_ends_when_idle_and_at_its_lifetime(database: str) -> None:
    # Short expiries (the settings allow a minute at least): the engine's clock is real.
    config = config_for(database, inbox_session_idle=1.5, inbox_session_lifetime=3.0)
    with ServiceRunner(config, "127.0.0.1", 0) as runner:
        key = runner.create_account("expiring")
        with browser(runner) as client:
            log_in(client, key)
            opened = time.monotonic()
            # A copy of the cookie, kept past its Max-Age (the client would drop it
            # then): the service itself has to refuse it.
            kept = {SESSION: client.cookies[SESSION]}
            # Used every 0.6 s, it outlives its idle expiry (each use is recorded) …
            for _ in range(3):
                time.sleep(0.6)
                assert client.get("/inbox").status_code == 200
            # … until its lifetime ends, however it is used.
            time.sleep(max(0.0, 3.1 - (time.monotonic() - opened)))
            with with_cookies(runner, kept) as late:
                assert on_login_page(late.get("/inbox"))

            log_in(client, key)
            kept = {SESSION: client.cookies[SESSION]}
            assert client.get("/inbox").status_code == 200
            time.sleep(1.6)  # unused past the idle expiry
            with with_cookies(runner, kept) as idle:
                assert on_login_page(idle.get("/inbox"))


def _cookie_value(line: str) -> str:
    return line.split(";", 1)[0].split("=", 1)[1]


def test_secure_cookies_when_the_public_url_is_https(database: str) -> None:
    # Browsers reach it at https (a TLS proxy in front); these requests come over plain
    # http on loopback, with no X-Forwarded-Proto.
    with ServiceRunner(
        config_for(database), "127.0.0.1", 0, public_url="https://hw.example.test"
    ) as runner:
        key = runner.create_account("secure")
        url = runner.bound_url
        login = httpx.post(f"{url}/inbox/login", data={"key": key}, trust_env=False)
        cookies = set_cookies(login)
        assert "secure" in attributes(cookies[SESSION])
        assert "secure" in attributes(cookies["hw_csrf"])
        # A client keeps a Secure cookie for https only: sent by hand here.
        csrf = _cookie_value(cookies["hw_csrf"])
        header = {"Cookie": f"{SESSION}={_cookie_value(cookies[SESSION])}; hw_csrf={csrf}"}
        done = httpx.post(
            f"{url}/inbox/text",
            data={"csrf": csrf, "channel": "sms", "from": "+12025550100", "body": " "},
            headers=header,
            trust_env=False,
        )
        assert done.status_code == 303
        assert "secure" in attributes(set_cookies(done)["hw_flash"])
        out = httpx.post(
            f"{url}/inbox/logout", data={"csrf": csrf}, headers=header, trust_env=False
        )
        assert out.status_code == 303
        assert "secure" in attributes(set_cookies(out)[SESSION])


def _login_cookie(runner: ServiceRunner, key: str, headers: dict[str, str]) -> str:
    with browser(runner) as client:
        response = client.post("/inbox/login", data={"key": key}, headers=headers)
        assert response.status_code == 303
        return set_cookies(response)[SESSION]


FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}


def test_forwarded_headers_are_believed_from_trusted_proxies_only(database: str) -> None:
    # The test client is 127.0.0.1: a trusted proxy by default.
    with ServiceRunner(config_for(database), "127.0.0.1", 0) as trusting:
        key = trusting.create_account("proxied")
        assert "secure" not in attributes(_login_cookie(trusting, key, {}))
        assert "secure" in attributes(_login_cookie(trusting, key, FORWARDED))
        with browser(trusting) as client:
            # The client's address is the forwarded one: not loopback, so no /metrics.
            assert client.get("/metrics").status_code != 401
            assert client.get("/metrics", headers=FORWARDED).status_code == 401

    # Only another peer trusted: 127.0.0.1's forwarded headers are ignored.
    config = config_for(database, trusted_proxies=("10.1.2.3",))
    with ServiceRunner(config, "127.0.0.1", 0) as wary:
        key = wary.create_account("direct")
        assert "secure" not in attributes(_login_cookie(wary, key, FORWARDED))
        with browser(wary) as client:
            assert client.get("/metrics", headers=FORWARDED).status_code != 401
