"""The inbox's sessions: logging in with the API key opens one, and the browser keeps
only its opaque token (32 random bytes), never the key. The store keeps the token's
SHA-256 with the account and the hash of the key it was opened with, so a logout, a key
rotation (from any process) or the expiry ends it, on every replica sharing the
database.

A session ends ``inbox_session_lifetime`` after the login however it is used, and after
``inbox_session_idle`` without a request. Its last use is written at most once a minute
(``TOUCH_EVERY``), not at every page: the idle expiry is that much coarse.

The sessions role: ``engine.sessions``."""

from __future__ import annotations

import secrets

from ..store.records import InboxSessionRecord
from ._common import Account, _hash_key
from .runtime import Runtime

TOKEN_BYTES = 32
TOUCH_EVERY = 60.0
"""Seconds between two writes of a session's last use (less with a short idle expiry)."""


class InboxSessions:
    """The inbox's logins: opened with a key, found by their token, closed."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._store = runtime.store

    async def open(self, api_key: str) -> tuple[Account, str] | None:
        """A new session for the key's account: ``(account, token)``, the token for the
        cookie; None when the key opens no account. Sessions no longer valid are dropped
        here (logins are rare; nothing else has to sweep them)."""
        record = await self._store.account_by_key_hash(_hash_key(api_key))
        if record is None:
            return None
        now = self._runtime.clock()
        await self._store.prune_inbox_sessions(now, now - self._runtime.config.inbox_session_idle)
        token = secrets.token_urlsafe(TOKEN_BYTES)
        await self._store.insert_inbox_session(
            InboxSessionRecord(
                id_hash=_hash_key(token),
                account_id=record.id,
                key_hash=record.key_hash,
                created_at=now,
                expires_at=now + self._runtime.config.inbox_session_lifetime,
                seen_at=now,
            )
        )
        return Account(id=record.id, name=record.name, suspended=record.suspended), token

    async def account_of(self, token: str) -> Account | None:
        """The account of a valid session (None: unknown, logged out, expired, or its
        key rotated); marks it used."""
        now = self._runtime.clock()
        idle = self._runtime.config.inbox_session_idle
        found = await self._store.inbox_session(_hash_key(token), now, now - idle)
        if found is None:
            return None
        session, record = found
        if now - session.seen_at >= min(TOUCH_EVERY, idle / 4):
            await self._store.touch_inbox_session(session.id_hash, now)
        return Account(id=record.id, name=record.name, suspended=record.suspended)

    async def close(self, token: str) -> bool:
        """Ends the session (a logout): its token opens nothing from now on."""
        return await self._store.delete_inbox_session(_hash_key(token))
