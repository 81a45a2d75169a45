"""Who is looking at the inbox: the account's API key sent as the API's bearer header,
or a session opened by logging in with the key (the login page, or a first ``?key=``
visit) and kept in a cookie.

The session cookie holds an opaque token, never the key: the store keeps its hash and
ends it at a logout, a rotation of the key or its expiry (``engine.sessions``). It is
HttpOnly, SameSite=Strict, limited to ``/inbox`` and ``Secure`` whenever the service's
public URL is https (or the request came over https). Every action is a POST carrying a
CSRF token that must equal the ``hw_csrf`` cookie (double submit). A bearer-authenticated
request needs no CSRF token: a cross-site page cannot set that header."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from ..engine import Account, Engine

__all__ = [
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "FLASH_COOKIE",
    "LEGACY_KEY_COOKIE",
    "SESSION_COOKIE",
    "Viewer",
    "clear_flash",
    "clear_session",
    "cookie_secure",
    "csrf_ok",
    "forget_legacy_cookie",
    "identify",
    "key_from_bearer",
    "read_flash",
    "session_token",
    "set_flash",
    "set_session",
]

SESSION_COOKIE = "hw_inbox_session"
LEGACY_KEY_COOKIE = "hw_inbox_key"
"""Where the inbox kept the API key itself before sessions: read by nothing now, and
deleted from a browser that still sends it."""
CSRF_COOKIE = "hw_csrf"
FLASH_COOKIE = "hw_flash"
CSRF_FIELD = "csrf"
COOKIE_PATH = "/inbox"


@dataclass(frozen=True)
class Viewer:
    account: Account
    by_bearer: bool
    """Authenticated by the Authorization header (no cookie, no CSRF needed)."""
    csrf: str
    """The token the page's forms carry (empty for a bearer viewer)."""


def key_from_bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def session_token(request: Request) -> str | None:
    return request.cookies.get(SESSION_COOKIE) or None


async def identify(request: Request, engine: Engine) -> Viewer | None:
    bearer = key_from_bearer(request)
    if bearer is not None:
        account = await engine.accounts.authenticate(bearer)
        return Viewer(account, True, "") if account is not None else None
    token = session_token(request)
    if token is None:
        return None
    account = await engine.sessions.account_of(token)
    if account is None:
        return None
    return Viewer(account, False, request.cookies.get(CSRF_COOKIE, ""))


def csrf_ok(viewer: Viewer, submitted: str | None) -> bool:
    if viewer.by_bearer:
        return True
    return bool(viewer.csrf) and hmac.compare_digest(viewer.csrf, submitted or "")


def cookie_secure(request: Request, public_url: str) -> bool:
    """``Secure`` on the inbox's cookies: when browsers reach the service over https
    (its public URL says so) or this request came over https. Not from the request
    alone: behind a TLS-terminating proxy whose ``X-Forwarded-Proto`` is not trusted
    (``trusted_proxies``), every request looks like plain http."""
    return public_url.lower().startswith("https://") or request.url.scheme == "https"


def set_session(
    response: Response, request: Request, token: str, *, secure: bool, max_age: int
) -> None:
    """The session's token and a fresh CSRF token, both HttpOnly, SameSite=Strict,
    inbox-only, for as long as the session lasts."""
    for name, value in ((SESSION_COOKIE, token), (CSRF_COOKIE, secrets.token_urlsafe(32))):
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=COOKIE_PATH,
            httponly=True,
            samesite="strict",
            secure=secure,
        )
    forget_legacy_cookie(request, response)


def clear_session(response: Response, request: Request, *, secure: bool) -> None:
    for name in (SESSION_COOKIE, CSRF_COOKIE):
        response.delete_cookie(
            name, path=COOKIE_PATH, secure=secure, httponly=True, samesite="strict"
        )
    forget_legacy_cookie(request, response)


def forget_legacy_cookie(request: Request, response: Response) -> None:
    """A browser still holding the key in the old cookie is told to drop it."""
    if request.cookies.get(LEGACY_KEY_COOKIE):
        response.delete_cookie(
            LEGACY_KEY_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict"
        )


def set_flash(response: Response, text: str, *, secure: bool, ok: bool = True) -> None:
    """A one-time notice for the page the action redirects to."""
    response.set_cookie(
        FLASH_COOKIE,
        ("ok:" if ok else "bad:") + text[:300],
        max_age=60,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def read_flash(request: Request) -> tuple[str, bool] | None:
    """The notice set by the last action: ``(text, ok)``."""
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw:
        return None
    tone, _, text = raw.partition(":")
    return text, tone == "ok"


def clear_flash(request: Request, response: Response) -> None:
    """Shown once: the page that shows it drops it."""
    if request.cookies.get(FLASH_COOKIE):
        response.delete_cookie(FLASH_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict")
