"""Accounts: creation, key authentication (only a hash of the key is stored) and the
per-request limits."""

from __future__ import annotations

import secrets
import time
import uuid

from ..errors import (
    Conflict,
    InvalidRequest,
    RateLimited,
)
from ..store.base import (
    AccountRecord,
    Duplicate,
)
from ._common import Account, _hash_key
from .core import EngineCore


class Accounts(EngineCore):
    def create_account(
        self, name: str | None = None, api_key: str | None = None
    ) -> tuple[Account, str]:
        """Creates an account and returns it with its API key (the given one, or a new
        ``hw_`` + 32 url-safe characters). Only a hash of the key is stored."""
        key = api_key if api_key is not None else "hw_" + secrets.token_urlsafe(24)
        if not key.strip():
            raise InvalidRequest("the API key must not be empty", field="apiKey")
        record = AccountRecord(
            id=str(uuid.uuid4()),
            name=name or f"account {self.store.count_accounts() + 1}",
            key_hash=_hash_key(key),
            suspended=False,
            created_at=time.time(),
        )
        try:
            self.store.insert_account(record)
        except Duplicate:
            raise Conflict("an account with this API key exists already") from None
        return Account(id=record.id, name=record.name), key

    def authenticate(self, api_key: str) -> Account | None:
        record = self.store.account_by_key_hash(_hash_key(api_key))
        if record is None:
            return None
        return Account(id=record.id, name=record.name, suspended=record.suspended)

    def check_limits(self, account: Account) -> None:
        """Raises ``AccountSuspended`` or ``RateLimited`` (with ``retry_after``). The
        HTTP layer calls it once per authenticated request."""
        self._require_active(account)
        retry_after = self._rate_hit(account.id)
        if retry_after is not None:
            raise RateLimited(
                f"rate limit of {self.config.rate_limit_requests} requests per "
                f"{self.config.rate_limit_window:g} s exceeded",
                retry_after=retry_after,
            )
