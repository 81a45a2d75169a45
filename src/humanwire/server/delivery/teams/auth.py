"""What proves an activity is Microsoft's: the Bot Framework's bearer token
(docs/going-live/teams.md, "What the service checks").

Every activity Teams POSTs to ``/providers/teams/messages`` carries ``Authorization:
Bearer <JWT>``. It is verified in full (PyJWT, the ``teams`` extra) before the body is
used: signed RS256 by a key of the Bot Framework's key set (by its ``kid``; a key that
lists ``endorsements`` must endorse the activity's ``channelId``), ``iss``
``https://api.botframework.com``, ``aud`` the app id, ``exp`` (and ``nbf``) within
``LEEWAY``, and the ``serviceurl`` claim equal to the activity's ``serviceUrl``, the
address the service will later send to. Anything else (no token, another algorithm, an
unknown key id, a foreign key, another issuer or audience, an expired token, another
service URL) is ``Unverified``: 401, never 500.

The key set (``KeySet``) is given: fetched by the provider from ``[teams] jwks_url``
(Microsoft's by default; the contract fake's in tests), or built from a JWKS document
directly. A token signed by a key id the set does not hold asks for a refetch
(``KeySet.missed``), at most once a ``REFRESH_GAP``: Microsoft rolls its keys.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request

from ..provider_routes import Unverified

__all__ = ["ISSUER", "LEEWAY", "BotFrameworkToken", "KeySet", "Token"]

ISSUER = "https://api.botframework.com"
LEEWAY = 300
"""Seconds of clock skew allowed on ``exp`` and ``nbf`` (what Microsoft's SDKs allow)."""
REFRESH_GAP = 60.0
MAX_TOKEN = 16_384
"""Characters of a bearer token read at all (a real one is about 1,500)."""


class KeySet:
    """The Bot Framework's signing keys by key id (``load`` a JWKS document)."""

    def __init__(self, document: Mapping[str, Any] | None = None) -> None:
        self._keys: dict[str, Any] = {}
        self._endorsements: dict[str, list[str] | None] = {}
        self._asked = 0.0
        self.on_miss: Callable[[], None] | None = None
        """Called (at most once a ``REFRESH_GAP``) when a token names a key id not held."""
        if document is not None:
            self.load(document)

    def load(self, document: Mapping[str, Any]) -> None:
        import jwt

        keys: dict[str, Any] = {}
        endorsements: dict[str, list[str] | None] = {}
        for entry in document.get("keys") or ():
            if not isinstance(entry, Mapping) or entry.get("kty") != "RSA" or not entry.get("kid"):
                continue
            try:
                keys[str(entry["kid"])] = jwt.PyJWK(dict(entry), algorithm="RS256").key
            except jwt.PyJWTError:
                continue
            listed = entry.get("endorsements")
            endorsements[str(entry["kid"])] = [str(e) for e in listed] if listed else None
        self._keys, self._endorsements = keys, endorsements

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, kid: str) -> tuple[Any, list[str] | None] | None:
        key = self._keys.get(kid)
        return None if key is None else (key, self._endorsements.get(kid))

    def missed(self) -> None:
        now = time.monotonic()
        if self.on_miss is not None and now - self._asked >= REFRESH_GAP:
            self._asked = now
            self.on_miss()


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()


class Token:
    """A verified token: its claims and the endorsements of the key that signed it."""

    def __init__(self, claims: dict[str, Any], endorsements: list[str] | None) -> None:
        self.claims = claims
        self.endorsements = endorsements

    def check(self, activity: Mapping[str, Any]) -> None:
        """Raises ``Unverified`` unless the token speaks for ``activity``: its
        ``serviceurl`` is the activity's ``serviceUrl``, and the key endorses the
        activity's ``channelId`` (when the key lists endorsements)."""
        service_url = activity.get("serviceUrl")
        if not isinstance(service_url, str) or not _same_url(
            self.claims["serviceurl"], service_url
        ):
            raise Unverified("the bearer token's serviceurl is not the activity's serviceUrl")
        channel = activity.get("channelId")
        if self.endorsements is not None and channel not in self.endorsements:
            raise Unverified("the signing key does not endorse the activity's channel")


class BotFrameworkToken:
    """The ``Verifier`` of ``/providers/teams/messages`` (the module says what it checks).

    ``verify`` checks the token and leaves it on ``request.state.teams_token``; the
    route checks it against the activity once the body is read (``Token.check``), so a
    verified body that is no activity is 400, as every provider route answers.
    ``claims`` does both at once (for a direct caller)."""

    header = "Authorization"

    def __init__(self, app_id: str, keys: KeySet) -> None:
        self.app_id = app_id
        self.keys = keys

    def verify(self, request: Request, body: bytes) -> None:
        request.state.teams_token = self.token(request.headers.get("authorization", ""))

    def claims(self, authorization: str, body: bytes) -> dict[str, Any]:
        token = self.token(authorization)
        try:
            activity = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise Unverified(
                "the body is not an activity: its serviceUrl cannot be checked"
            ) from None
        if not isinstance(activity, dict):
            raise Unverified("the body is not an activity: its serviceUrl cannot be checked")
        token.check(activity)
        return token.claims

    def token(self, authorization: str) -> Token:
        import jwt

        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN:
            raise Unverified("missing or invalid Authorization: Bearer token")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unverified("the bearer token is not a JWT") from None
        if header.get("alg") != "RS256":
            raise Unverified("the bearer token is not signed RS256")
        kid = header.get("kid")
        found = self.keys.get(kid) if isinstance(kid, str) else None
        if found is None:
            self.keys.missed()
            raise Unverified("the bearer token's key is not one of the Bot Framework's")
        key, endorsements = found
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=["RS256"],
                audience=self.app_id,
                issuer=ISSUER,
                leeway=LEEWAY,
                options={"require": ["exp", "iss", "aud", "serviceurl"]},
            )
        except jwt.ExpiredSignatureError:
            raise Unverified("the bearer token has expired") from None
        except jwt.InvalidIssuerError:
            raise Unverified("the bearer token is not the Bot Framework's (issuer)") from None
        except jwt.InvalidAudienceError:
            raise Unverified("the bearer token is not for this app (audience)") from None
        except jwt.PyJWTError as exc:
            raise Unverified(f"invalid bearer token ({type(exc).__name__})") from None
        if not isinstance(claims["serviceurl"], str):
            raise Unverified("the bearer token's serviceurl is not a URL")
        return Token(claims, endorsements)
