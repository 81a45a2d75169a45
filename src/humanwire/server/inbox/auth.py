"""Who is looking at the inbox: the account's API key, sent as the API's bearer header
or kept in a cookie after the login page (or a first ``?key=`` visit).

The key cookie is HttpOnly and SameSite=Strict; every action is a POST carrying a CSRF
token that must equal the ``hw_csrf`` cookie (double submit). A bearer-authenticated
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
    "KEY_COOKIE",
    "Viewer",
    "clear_flash",
    "clear_session",
    "csrf_ok",
    "identify",
    "key_from_bearer",
    "read_flash",
    "set_flash",
    "set_session",
]

KEY_COOKIE = "hw_inbox_key"
CSRF_COOKIE = "hw_csrf"
FLASH_COOKIE = "hw_flash"
CSRF_FIELD = "csrf"
COOKIE_PATH = "/inbox"
SESSION_MAX_AGE = 30 * 24 * 3600


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


def identify(request: Request, engine: Engine) -> Viewer | None:
    bearer = key_from_bearer(request)
    if bearer is not None:
        account = engine.authenticate(bearer)
        return Viewer(account, True, "") if account is not None else None
    key = request.cookies.get(KEY_COOKIE)
    if not key:
        return None
    account = engine.authenticate(key)
    if account is None:
        return None
    return Viewer(account, False, request.cookies.get(CSRF_COOKIE, ""))


def csrf_ok(viewer: Viewer, submitted: str | None) -> bool:
    if viewer.by_bearer:
        return True
    return bool(viewer.csrf) and hmac.compare_digest(viewer.csrf, submitted or "")


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def set_session(response: Response, request: Request, api_key: str) -> None:
    """The key and a fresh CSRF token, both HttpOnly, SameSite=Strict, inbox-only."""
    secure = _secure(request)
    for name, value in ((KEY_COOKIE, api_key), (CSRF_COOKIE, secrets.token_urlsafe(32))):
        response.set_cookie(
            name,
            value,
            max_age=SESSION_MAX_AGE,
            path=COOKIE_PATH,
            httponly=True,
            samesite="strict",
            secure=secure,
        )


def clear_session(response: Response) -> None:
    for name in (KEY_COOKIE, CSRF_COOKIE):
        response.delete_cookie(name, path=COOKIE_PATH, httponly=True, samesite="strict")


def set_flash(response: Response, request: Request, text: str, *, ok: bool = True) -> None:
    """A one-time notice for the page the action redirects to."""
    response.set_cookie(
        FLASH_COOKIE,
        ("ok:" if ok else "bad:") + text[:300],
        max_age=60,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
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
