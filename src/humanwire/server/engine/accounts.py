"""Accounts: creation, key authentication (only a hash of the key is stored), the
per-request limits, and what operators do to accounts (``humanwire accounts``: list,
suspend, reinstate, rotate the key, delete).

Nothing about an account is cached in a process: every request reads its account by
the key's hash, so what an operator changes (from the CLI, another process, on the same
database) holds from the next request on every replica.

The accounts role (``engine.accounts``) owns this, and the checks of a request's account:
suspension, the spam guard of a send, the rate limit (counted through the
``Coordinator``).

The inbox's sessions: logging in with the API key opens one, and the browser keeps
only its opaque token (32 random bytes), never the key. The store keeps the token's
SHA-256 with the account and the hash of the key it was opened with, so a logout, a key
rotation (from any process) or the expiry ends it, on every replica sharing the
database.

A session ends ``inbox_session_lifetime`` after the login however it is used, and after
``inbox_session_idle`` without a request. Its last use is written at most once a minute
(``TOUCH_EVERY``), not at every page: the idle expiry is that much coarse.

The sessions role: ``engine.sessions``.

``Idempotency-Key``: a send runs at most once per key; a retry gets the stored result,
joins the run still holding, or re-attaches to the interaction a first run created before
a restart.

The idempotency role: ``engine.idempotency``; a send's answer given 202 is written as
``wait.ended`` through the events role.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..errors import AccountSuspended, Conflict, InvalidRequest, NotFound, RateLimited, Unauthorized
from ..store.commits import StoreUnavailable
from ..store.protocol import Duplicate
from ..store.records import (
    AccountRecord,
    AccountUsage,
    IdempotencyRecord,
    InboxSessionRecord,
    InteractionRecord,
)
from ._common import DELETED_MESSAGE, SPAM_MESSAGE, SUSPENDED_MESSAGE, Account, RateCount
from .events import OutcomeEvents
from .holds import HELD_TO_THE_END, Follow, IdempotentRun, Requesters, SendContext
from .numbers import NUMBER_SCOPE
from .runtime import Runtime

logger = logging.getLogger("humanwire.engine")


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


@dataclass(frozen=True)
class RunInFlight:
    """A run under an ``Idempotency-Key`` going on in this process: retries with the
    same key join it."""

    fingerprint: str
    task: asyncio.Task[tuple[int, bytes]]
    requesters: Requesters
    """The requests waiting for it: held until every one of them has gone."""
    run: IdempotentRun


class Idempotency:
    """Runs a send at most once per ``(account, key)``."""

    def __init__(self, runtime: Runtime, events: OutcomeEvents) -> None:
        self._runtime = runtime
        self._events = events
        self._runs: dict[tuple[str, str], RunInFlight] = {}
        # Keys whose stored result and link one request is reading (``run``).
        self._lookups: dict[tuple[str, str], asyncio.Future[None]] = {}

    def tasks(self) -> list[asyncio.Task[tuple[int, bytes]]]:
        """The runs going on here (``Engine.close`` waits for them, then cancels)."""
        return [running.task for running in self._runs.values()]

    async def run(
        self,
        account: Account,
        key: str,
        fingerprint: str,
        run: Callable[[SendContext], Awaitable[tuple[int, bytes]]],
        context: SendContext = HELD_TO_THE_END,
    ) -> tuple[int, bytes]:
        """Runs ``run`` (which produces the HTTP status and body) at most once per
        ``(account, key)`` within ``config.idempotency_ttl``: a later call with the same
        key and ``fingerprint`` (method, path and a hash of the body) returns the stored
        result; one arriving while the first is still held waits for it; a different
        fingerprint raises ``Conflict``. Results are stored, so a restart keeps them.

        ``run`` gets the ``SendContext`` its send must be made with: ``context`` (the
        request's) with the key's run, held until every request waiting for it is gone.

        A send run under a key stores a link key → interaction with the interaction it
        creates, before anything is delivered. A retry whose first run never finished
        (no stored result and none running here: the service restarted while it was
        held) runs ``run`` again with that interaction to re-attach to: nothing is
        delivered again, the retry waits for what is left of the first run's window (or
        gets what the interaction became) and answers in the same shape. An interaction
        whose delivery failed is not re-attached to (nothing reached the human).

        The run is its own task, shielded from the caller: a client that gives up and
        retries finds the first run still holding, not cancelled. Results with status
        429 or 5xx are not stored (a retry may succeed); an exception is not stored."""
        slot = (account.id, key)
        # Another request with this key is reading the store for it (its reads are
        # awaited): this one waits, then joins the run it starts or finds what it stored.
        while (looking := self._lookups.get(slot)) is not None:
            await asyncio.shield(looking)
        running = self._runs.get(slot)
        if running is not None:
            if running.fingerprint != fingerprint:
                raise self._conflict()
            accept = context.accept
            if accept is not None and running.run.holding_async and not accept.done():
                # A respond-async retry of a send holding after its 202 (the first answer
                # was lost on the way): 202 again, and one ``wait.ended`` for both.
                accept.set_result(running.run.holding_async)
            running.requesters.attach(context.gone)
            return await asyncio.shield(running.task)
        lookup: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lookups[slot] = lookup
        try:
            now = self._runtime.clock()
            stored, link = await self._runtime.store.get_idempotency_state(account.id, key)
            if (
                stored is not None
                and stored.created_at + self._runtime.config.idempotency_ttl > now
            ):
                if stored.fingerprint != fingerprint:
                    raise self._conflict()
                return stored.status_code, stored.body
            resume: InteractionRecord | None = None
            if link is not None and link.created_at + self._runtime.config.idempotency_ttl > now:
                if link.fingerprint != fingerprint:
                    raise self._conflict()
                first = await self._runtime.store.get_interaction(link.interaction_id)
                if (
                    first is not None
                    and first.account_id == account.id
                    and first.outcome != "failed"
                ):
                    resume = first
            state = IdempotentRun(account.id, key, fingerprint, resume)
            loop = asyncio.get_running_loop()
            requesters = Requesters(loop)
            requesters.attach(context.gone)
            # Held until every joined request left (not tracked: until the end).
            gone = None if requesters.untracked else requesters.gone
            given = SendContext(gone=gone, accept=context.accept, run=state)

            async def call() -> tuple[int, bytes]:
                me = asyncio.current_task()
                try:
                    status, body = await run(given)
                    if not self._runtime.lifecycle.closed:
                        # Stored before the run ends: a retry under the key finds it the
                        # moment the run is no longer in ``_runs``. The answer
                        # stands even if this fails (as when a done callback stored it).
                        try:
                            await self._done(slot, fingerprint, status, body, state)
                        except Exception:
                            logger.exception("storing the result of an idempotent request failed")
                    return status, body
                finally:
                    running = self._runs.get(slot)
                    if running is not None and running.task is me:
                        del self._runs[slot]

            task = loop.create_task(call())
            self._runs[slot] = RunInFlight(fingerprint, task, requesters, state)
        finally:
            del self._lookups[slot]
            lookup.set_result(None)
        return await asyncio.shield(task)

    @staticmethod
    def _conflict() -> Conflict:
        return Conflict(
            "this Idempotency-Key was already used with a different request",
            field="Idempotency-Key",
        )

    async def _done(
        self, slot: tuple[str, str], fingerprint: str, status: int, body: bytes, run: IdempotentRun
    ) -> None:
        if status >= 500 or status == 429:
            return
        followed = run.holding_async
        if followed is not None and followed.follow is Follow.WRITTEN:
            return  # written with its wait.ended, by the end that answered it
        record = IdempotencyRecord(
            account_id=slot[0],
            key=slot[1],
            fingerprint=fingerprint,
            status_code=status,
            body=body,
            created_at=self._runtime.clock(),
        )
        if followed is not None and followed.followed:
            # Answered 202: its answer goes out as ``wait.ended`` (``follow_async``),
            # written here with the stored result, in one transaction: one round trip
            # fewer before a replica's reader hears it, and no moment when one is
            # stored without the other.
            await self._events.wait_ended(
                followed, status, json.loads(body) if body else {}, idempotency=record
            )
            followed.follow = Follow.WRITTEN
            return
        try:
            await self._runtime.store.put_idempotency(record)
        except StoreUnavailable:
            # Answered all the same: a retry under the key re-attaches to the stored
            # interaction (its link) and answers the same.
            logger.warning("the result of an idempotent request could not be stored")


def _hash_key(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()
