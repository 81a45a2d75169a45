"""Accounts: creation, key authentication (only a hash of the key is stored), the
per-request limits, and what operators do to accounts (``humanwire accounts``: list,
suspend, reinstate, rotate the key, delete).

Nothing about an account is cached in a process: every request reads its account by
the key's hash, so what an operator changes (from the CLI, another process, on the same
database) holds from the next request on every replica.

The accounts role (``engine.accounts``) owns this, and the checks of a request's account:
suspension, the spam guard of a send, the rate limit (counted through the
``Coordinator``)."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass

from ..errors import (
    AccountSuspended,
    Conflict,
    InvalidRequest,
    NotFound,
    RateLimited,
    Unauthorized,
)
from ..store.protocol import Duplicate
from ..store.records import AccountRecord, AccountUsage, InteractionRecord
from ._common import DELETED_MESSAGE, SPAM_MESSAGE, SUSPENDED_MESSAGE, Account, RateCount, _hash_key
from .numbers import NUMBER_SCOPE
from .runtime import Runtime


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


class Accounts:
    """Accounts and their keys, the limits of a request, and what operators do."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._coordinator = runtime.coordinator
        # Accounts the spam guard suspended here: sends already past authentication
        # are refused too. Only a hint, checked against the store (a reinstatement from
        # another process must hold at once).
        self._suspended: set[str] = set()

    async def create(
        self, name: str | None = None, api_key: str | None = None
    ) -> tuple[Account, str]:
        """Creates an account and returns it with its API key (the given one, or a new
        ``hw_`` + 32 url-safe characters). Only a hash of the key is stored."""
        key = api_key if api_key is not None else _new_key()
        if not key.strip():
            raise InvalidRequest("the API key must not be empty", field="apiKey")
        record = AccountRecord(
            id=str(uuid.uuid4()),
            name=name or f"account {await self._store.count_accounts() + 1}",
            key_hash=_hash_key(key),
            suspended=False,
            created_at=self._runtime.clock(),
        )
        try:
            await self._store.insert_account(record)
        except Duplicate:
            raise Conflict("an account with this API key exists already") from None
        return Account(id=record.id, name=record.name), key

    async def authenticate(self, api_key: str) -> Account | None:
        record = await self._store.account_by_key_hash(_hash_key(api_key))
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
        record, counted, interaction = await self._coordinator.account_by_key(
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
        await self.require_active(account)
        retry_after = (
            counted.retry_after
            if counted is not None
            else await self._coordinator.rate_hit(account.id)
        )
        if retry_after is not None:
            raise RateLimited(
                f"rate limit of {self._runtime.config.rate_limit_requests} requests per "
                f"{self._runtime.config.rate_limit_window:g} s exceeded",
                retry_after=retry_after,
            )

    async def by_id(self, account_id: str) -> Account:
        """The account of a record found by something other than its key (a number, a
        provider's callback)."""
        record = await self._store.get_account(account_id)
        if record is None:
            raise NotFound(f"no account {account_id!r}")
        return Account(id=record.id, name=record.name, suspended=record.suspended)

    async def require_active(self, account: Account) -> None:
        """Raises ``AccountSuspended`` for a suspended account (``Unauthorized`` for one
        deleted since its key was checked)."""
        suspended = account.suspended
        if not suspended and account.id in self._suspended:
            current = await self._store.get_account(account.id)
            if current is None:
                raise Unauthorized(DELETED_MESSAGE)
            suspended = current.suspended
            if not suspended:
                self._suspended.discard(account.id)  # reinstated (by any process)
        if suspended:
            # Counts from before the suspension must not suspend it again once reinstated.
            self._coordinator.forget_spam_here(account.id)
            raise AccountSuspended(SUSPENDED_MESSAGE)

    async def check_send(self, account: Account, text: str, to: str) -> None:
        """The spam guard, run on every send before anything goes out (counted in the
        database when replicas share it)."""
        await self.require_active(account)
        if await self._coordinator.spam_hit(account.id, text, to):
            await self._store.set_account_suspended(account.id, True)
            self._suspended.add(account.id)
            await self._coordinator.forget_spam(account.id)
            raise AccountSuspended(SPAM_MESSAGE)

    # -- what operators do (``humanwire accounts``) --------------------------------------
    async def _record(self, account_id: str) -> AccountRecord:
        record = await self._store.get_account(account_id)
        if record is None:
            raise NotFound(f"no account {account_id!r}")
        return record

    async def list_all(self) -> list[AccountInfo]:
        """Every account, oldest first, with what it holds."""
        usage = await self._store.account_usage()
        return [
            AccountInfo(
                id=record.id,
                name=record.name,
                created_at=record.created_at,
                suspended=record.suspended,
                usage=usage.get(record.id, AccountUsage()),
            )
            for record in await self._store.list_accounts()
        ]

    async def info(self, account_id: str) -> AccountInfo:
        """One account as ``list_all`` shows it; ``NotFound`` when unknown."""
        for info in await self.list_all():
            if info.id == account_id:
                return info
        raise NotFound(f"no account {account_id!r}")

    async def suspend(self, account_id: str) -> bool:
        """Every request of the account is refused 403 ``account_suspended`` from the
        next one on, as when the spam guard suspends it. False when it was already."""
        record = await self._record(account_id)
        await self._store.set_account_suspended(account_id, True)
        return not record.suspended

    async def reinstate(self, account_id: str) -> bool:
        """Lifts a suspension (the spam guard's or an operator's). The spam guard's counts
        of the account are forgotten, so what led to the suspension does not suspend it
        again at its next send: here, and in the database replicas share (a service
        process forgets its own counts when it sees the account suspended). False when
        it was not suspended."""
        record = await self._record(account_id)
        await self._store.set_account_suspended(account_id, False)
        await self._coordinator.forget_spam(account_id)
        return record.suspended

    async def rotate_key(self, account_id: str) -> tuple[str, str]:
        """A new API key for the account: ``(old key's hash, new key)``. The old key is
        refused (401) from the next request on, the new one works at once."""
        record = await self._record(account_id)
        key = _new_key()
        if not await self._store.set_account_key_hash(account_id, _hash_key(key)):
            raise NotFound(f"no account {account_id!r}")  # deleted meanwhile
        return record.key_hash, key

    async def delete(self, account_id: str) -> DeletedAccount:
        """Removes the account and all its data in one transaction (``Store.
        delete_account``). Its key is refused (401) from the next request on; a request
        of it held open ends 401 when its window closes."""
        from ..delivery.twilio.jobs import JOB_SCOPE  # a module without Twilio's extras

        record = await self._record(account_id)
        numbers = [number.phone_number for number in await self._store.numbers_of(account_id)]
        bought = []
        for phone_number in numbers:
            data = await self._store.get_provider_state(NUMBER_SCOPE, phone_number)
            if data is not None and data.get("bought") and data.get("sid"):
                bought.append((phone_number, str(data["sid"])))
        removed = await self._store.delete_account(account_id)
        if removed is None:
            raise NotFound(f"no account {account_id!r}")
        self._coordinator.forget_spam_here(account_id)
        now = self._runtime.clock()
        for _phone_number, sid in bought:
            # Twilio's job runner (``TwilioJobs``) picks it up; it is what
            # ``Numbers.delete`` queues through the number source.
            job = {"kind": "release_number", "sid": sid, "attempts": 0}
            await self._store.put_provider_state(JOB_SCOPE, f"release_number:{sid}", job, now)
        return DeletedAccount(
            id=record.id,
            name=record.name,
            removed=removed,
            numbers=numbers,
            released=[phone_number for phone_number, _sid in bought],
        )
