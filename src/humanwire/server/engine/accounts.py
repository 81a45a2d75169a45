"""Accounts: creation, key authentication (only a hash of the key is stored), the
per-request limits, and what operators do to accounts (``humanwire accounts``: list,
suspend, reinstate, rotate the key, delete).

Nothing about an account is cached in a process: every request reads its account by
the key's hash, so what an operator changes (from the CLI, another process, on the same
database) holds from the next request on every replica."""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass

from ..errors import (
    Conflict,
    InvalidRequest,
    NotFound,
    RateLimited,
)
from ..store.protocol import Duplicate
from ..store.records import AccountRecord, AccountUsage, InteractionRecord
from ._common import Account, RateCount, _hash_key
from .core import EngineCore


@dataclass(frozen=True)
class AccountInfo:
    """An account as operators see it: never its key (only a hash is stored)."""

    id: str
    name: str
    created_at: float
    suspended: bool
    usage: AccountUsage


@dataclass(frozen=True)
class DeletedAccount:
    id: str
    name: str
    removed: dict[str, int]
    """Rows removed per table."""
    numbers: list[str]
    """The phone numbers it had reserved (free for others now)."""
    released: list[str]
    """Of those, the ones bought at the provider for it: a stored job releases them
    (the service with the provider configured runs it at its next start)."""


def _new_key() -> str:
    return "hw_" + secrets.token_urlsafe(24)


class Accounts(EngineCore):
    async def create_account(
        self, name: str | None = None, api_key: str | None = None
    ) -> tuple[Account, str]:
        """Creates an account and returns it with its API key (the given one, or a new
        ``hw_`` + 32 url-safe characters). Only a hash of the key is stored."""
        key = api_key if api_key is not None else _new_key()
        if not key.strip():
            raise InvalidRequest("the API key must not be empty", field="apiKey")
        record = AccountRecord(
            id=str(uuid.uuid4()),
            name=name or f"account {await self.store.count_accounts() + 1}",
            key_hash=_hash_key(key),
            suspended=False,
            created_at=time.time(),
        )
        try:
            await self.store.insert_account(record)
        except Duplicate:
            raise Conflict("an account with this API key exists already") from None
        return Account(id=record.id, name=record.name), key

    async def authenticate(self, api_key: str) -> Account | None:
        record = await self.store.account_by_key_hash(_hash_key(api_key))
        if record is None:
            return None
        return Account(id=record.id, name=record.name, suspended=record.suspended)

    async def authenticate_request(
        self, api_key: str, named: str | None = None
    ) -> tuple[Account | None, RateCount | None, InteractionRecord | None]:
        """``authenticate`` for an API request, which ``check_limits`` then limits: with
        replicas, the key's account and the request's rate count come in one round trip
        (the count, not None, is passed on to ``check_limits``), and with them the
        interaction ``named`` by the request. That interaction is not checked against
        the account: pass it on to the engine call that checks it (None: not found, or
        no account)."""
        record, counted, interaction = await self.coordinator.account_by_key(
            _hash_key(api_key), named
        )
        if record is None:
            return None, None, None
        account = Account(id=record.id, name=record.name, suspended=record.suspended)
        return account, counted, interaction

    async def check_limits(self, account: Account, counted: RateCount | None = None) -> None:
        """Raises ``AccountSuspended`` or ``RateLimited`` (with ``retry_after``). The
        HTTP layer calls it once per authenticated request; ``counted``: the request
        was counted already (``authenticate_request``)."""
        await self._require_active(account)
        retry_after = (
            counted.retry_after if counted is not None else await self._rate_hit(account.id)
        )
        if retry_after is not None:
            raise RateLimited(
                f"rate limit of {self.config.rate_limit_requests} requests per "
                f"{self.config.rate_limit_window:g} s exceeded",
                retry_after=retry_after,
            )

    # -- what operators do (``humanwire accounts``) --------------------------------------
    async def _record(self, account_id: str) -> AccountRecord:
        record = await self.store.get_account(account_id)
        if record is None:
            raise NotFound(f"no account {account_id!r}")
        return record

    async def account_list(self) -> list[AccountInfo]:
        """Every account, oldest first, with what it holds."""
        usage = await self.store.account_usage()
        return [
            AccountInfo(
                id=record.id,
                name=record.name,
                created_at=record.created_at,
                suspended=record.suspended,
                usage=usage.get(record.id, AccountUsage()),
            )
            for record in await self.store.list_accounts()
        ]

    async def account_info(self, account_id: str) -> AccountInfo:
        """One account as ``account_list`` shows it; ``NotFound`` when unknown."""
        for info in await self.account_list():
            if info.id == account_id:
                return info
        raise NotFound(f"no account {account_id!r}")

    async def suspend_account(self, account_id: str) -> bool:
        """Every request of the account is refused 403 ``account_suspended`` from the
        next one on, as when the spam guard suspends it. False when it was already."""
        record = await self._record(account_id)
        await self.store.set_account_suspended(account_id, True)
        return not record.suspended

    async def reinstate_account(self, account_id: str) -> bool:
        """Lifts a suspension (the spam guard's or an operator's). The spam guard's counts
        of the account are forgotten, so what led to the suspension does not suspend it
        again at its next send: here, and in the database replicas share (a service
        process forgets its own counts when it sees the account suspended). False when
        it was not suspended."""
        record = await self._record(account_id)
        await self.store.set_account_suspended(account_id, False)
        await self.coordinator.forget_spam(account_id)
        return record.suspended

    async def rotate_key(self, account_id: str) -> tuple[str, str]:
        """A new API key for the account: ``(old key's hash, new key)``. The old key is
        refused (401) from the next request on, the new one works at once."""
        record = await self._record(account_id)
        key = _new_key()
        if not await self.store.set_account_key_hash(account_id, _hash_key(key)):
            raise NotFound(f"no account {account_id!r}")  # deleted meanwhile
        return record.key_hash, key

    async def delete_account(self, account_id: str) -> DeletedAccount:
        """Removes the account and all its data in one transaction (``Store.
        delete_account``). Its key is refused (401) from the next request on; a request
        of it held open ends 401 when its window closes."""
        from ..delivery.twilio.jobs import JOB_SCOPE  # a module without Twilio's extras
        from .numbers import NUMBER_SCOPE

        record = await self._record(account_id)
        numbers = [number.phone_number for number in await self.store.numbers_of(account_id)]
        bought = []
        for phone_number in numbers:
            data = await self.store.get_provider_state(NUMBER_SCOPE, phone_number)
            if data is not None and data.get("bought") and data.get("sid"):
                bought.append((phone_number, str(data["sid"])))
        removed = await self.store.delete_account(account_id)
        if removed is None:
            raise NotFound(f"no account {account_id!r}")
        self.coordinator.forget_spam_here(account_id)
        now = time.time()
        for _phone_number, sid in bought:
            # Twilio's job runner (``TwilioJobs``) picks it up; it is what
            # ``Numbers.delete_number`` queues through the number source.
            job = {"kind": "release_number", "sid": sid, "attempts": 0}
            await self.store.put_provider_state(JOB_SCOPE, f"release_number:{sid}", job, now)
        return DeletedAccount(
            id=record.id,
            name=record.name,
            removed=removed,
            numbers=numbers,
            released=[phone_number for phone_number, _sid in bought],
        )
