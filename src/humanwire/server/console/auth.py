"""Who is looking at the console, and its cookies.

The session cookie holds an opaque token (``engine.console``: the store keeps its hash);
HttpOnly, SameSite=Strict, limited to ``/console``, ``Secure`` whenever the service's
public URL is https (or the request came over https). Every POST, the sign-in's too,
carries a CSRF token that must equal the ``hw_console_csrf`` cookie (double submit); the
sign-in page sets that cookie before anyone is signed in, and a sign-in replaces it with a
fresh one beside the new session's token (the session id is rotated at every sign-in)."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from ..engine import Engine
from ..engine.console import ConsolePerson
from ..inbox.auth import cookie_secure

__all__ = [
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "FLASH_COOKIE",
    "SESSION_COOKIE",
    "Signed",
    "clear_flash",
    "clear_session",
    "cookie_secure",
    "csrf_of",
    "csrf_ok",
    "identify",
    "new_csrf",
    "read_flash",
    "session_token",
    "set_csrf",
    "set_flash",
    "set_session",
]

SESSION_COOKIE = "hw_console_session"
CSRF_COOKIE = "hw_console_csrf"
FLASH_COOKIE = "hw_console_flash"
CSRF_FIELD = "csrf"
COOKIE_PATH = "/console"


@dataclass(frozen=True)
class Signed:
    """A signed-in person and the CSRF token their page's forms carry."""

    person: ConsolePerson
    csrf: str


def session_token(request: Request) -> str | None:
    return request.cookies.get(SESSION_COOKIE) or None


def csrf_of(request: Request) -> str:
    return request.cookies.get(CSRF_COOKIE, "")


async def identify(request: Request, engine: Engine) -> Signed | None:
    token = session_token(request)
    if token is None:
        return None
    person = await engine.console.person_of(token)
    if person is None:
        return None
    return Signed(person, csrf_of(request))


def csrf_ok(request: Request, submitted: str | None) -> bool:
    expected = csrf_of(request)
    return bool(expected) and hmac.compare_digest(expected, submitted or "")


def new_csrf() -> str:
    return secrets.token_urlsafe(32)


def _cookie(response: Response, name: str, value: str, *, secure: bool, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def set_csrf(response: Response, value: str, *, secure: bool, max_age: int) -> None:
    _cookie(response, CSRF_COOKIE, value, secure=secure, max_age=max_age)


def set_session(response: Response, token: str, *, secure: bool, max_age: int) -> None:
    """The new session's token and a fresh CSRF token."""
    _cookie(response, SESSION_COOKIE, token, secure=secure, max_age=max_age)
    set_csrf(response, new_csrf(), secure=secure, max_age=max_age)


def clear_session(response: Response, *, secure: bool) -> None:
    for name in (SESSION_COOKIE, CSRF_COOKIE):
        response.delete_cookie(
            name, path=COOKIE_PATH, secure=secure, httponly=True, samesite="strict"
        )


def set_flash(response: Response, text: str, *, secure: bool, ok: bool = True) -> None:
    _cookie(
        response, FLASH_COOKIE, ("ok:" if ok else "bad:") + text[:300], secure=secure, max_age=60
    )


def read_flash(request: Request) -> tuple[str, bool] | None:
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw:
        return None
    tone, _, text = raw.partition(":")
    return text, tone == "ok"


def clear_flash(request: Request, response: Response) -> None:
    if request.cookies.get(FLASH_COOKIE):
        response.delete_cookie(FLASH_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict")
