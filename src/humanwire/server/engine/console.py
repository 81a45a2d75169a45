"""The console role (``engine.console``): signing a person of the people directory in to
the approvers' console (docs/guides/console.md) without a password, and their sessions.

A person asks for a code by giving one of their addresses (a phone number or an email
address). The service looks the address up among the **confirmed** addresses of every
account's people; when it is one, a six-digit code goes to it through the ordinary send
path (a message interaction of the person's account, listening one second: a reply is no
answer). Whether or not it is anyone's, the answer is the same, and the address's row is
written all the same: the rate limit (``SENDS_PER_WINDOW`` codes per ``SEND_WINDOW``)
counts the addresses nobody has, so being limited tells nothing either.

Only the code's hash is stored, bound to the address and the person (the message's
interaction keeps its text with the code masked; only the sandbox's record of what it
delivered, which stands for the person's phone, holds the code); it can be answered
for ``CODE_TTL`` seconds, once (spent by one statement: two answers at the same moment
cannot both sign in), and is void after ``MAX_MISSES`` wrong answers. An address
confirmed by people of several accounts signs in the oldest of them.

A right code opens a session: a fresh 32-byte token for the cookie, only its SHA-256 in
the store with the person and the account. It ends ``inbox_session_lifetime`` after the
sign-in, after ``inbox_session_idle`` unused, at a sign-out, when the person's sessions
are revoked (``revoke``), or when the person is deleted from the directory; each of
these is read from the store at every request, so it holds at once on every replica."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from dataclasses import dataclass
from typing import cast

from ..errors import RateLimited, ServiceError
from ..store.records import ConsoleCodeRecord, ConsoleSessionRecord
from ._common import Account, Channel
from .runtime import Runtime
from .sends import MessageSend, Senders, Sends, shared_template

__all__ = [
    "CODE_TTL",
    "MAX_MISSES",
    "SENDS_PER_WINDOW",
    "SEND_WINDOW",
    "ConsolePerson",
    "ConsoleSignIn",
    "sign_in_text",
]

logger = logging.getLogger("humanwire.engine")

CODE_TTL = 600.0
"""Seconds a sign-in code can be answered."""
MAX_MISSES = 5
"""Wrong answers after which a code is void."""
SENDS_PER_WINDOW = 5
"""Codes one address may be sent per ``SEND_WINDOW``."""
SEND_WINDOW = 900.0
TOKEN_BYTES = 32
TOUCH_EVERY = 60.0
_PHONE = re.compile(r"\+[1-9]\d{6,14}")
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,255}")
_CODE = re.compile(r"\d{6}")


def sign_in_text(code: str) -> str:
    return (
        f"Your humanwire console sign-in code is {code}. It expires in 10 minutes. "
        "If you did not ask for it, ignore this message."
    )


@dataclass(frozen=True)
class ConsolePerson:
    """Who is signed in: the person, of one account."""

    account: Account
    person_id: str
    name: str


def address_of(text: str) -> tuple[tuple[str, ...], str] | None:
    """The channels an address typed on the sign-in page may be confirmed on, and the
    address as stored (an email in lower case; a phone number without spaces, dashes,
    dots or brackets); None for text that is neither."""
    typed = text.strip()
    if "@" in typed:
        return (("email",), typed.lower()) if _EMAIL.fullmatch(typed) else None
    phone = re.sub(r"[\s\-.()]", "", typed)
    return (("sms", "whatsapp"), phone) if _PHONE.fullmatch(phone) else None


def _address_key(address: str) -> str:
    return hashlib.sha256(f"console-address\n{address}".encode()).hexdigest()


def _code_hash(key: str, account_id: str, person_id: str, code: str) -> str:
    """Bound to the address and the person: the hash fits nowhere else."""
    return hashlib.sha256(f"{key}\n{account_id}\n{person_id}\n{code}".encode()).hexdigest()


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ConsoleSignIn:
    """The console role (see the module docstring)."""

    def __init__(self, runtime: Runtime, *, sends: Sends, senders: Senders) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._sends = sends
        self._senders = senders

    # -- codes -------------------------------------------------------------------------
    async def send_code(self, typed: str) -> None:
        """Sends a code to ``typed`` if it is a person's confirmed address; the same
        (nothing) otherwise. ``RateLimited`` past ``SENDS_PER_WINDOW`` for the address,
        known or not."""
        now = self._runtime.clock()
        await self._store.prune_console_codes(now - SEND_WINDOW, now)
        parsed = address_of(typed)
        if parsed is None:
            return
        channels, address = parsed
        key = _address_key(address)
        row = await self._store.console_code(key)
        window_start, sent = now, 0
        if row is not None and row.window_start > now - SEND_WINDOW:
            window_start, sent = row.window_start, row.sent
        if sent >= SENDS_PER_WINDOW:
            raise RateLimited(
                "too many sign-in codes asked for; wait a few minutes",
                retry_after=max(1.0, window_start + SEND_WINDOW - now),
            )
        found = None
        for channel in channels:
            people = await self._store.confirmed_people_at(channel, address)
            if people:
                found = channel, *people[0]
                break
        if found is None:
            await self._store.put_console_code(
                ConsoleCodeRecord(key, None, None, None, None, 0, window_start, sent + 1)
            )
            return
        channel = cast(Channel, found[0])
        account_id, person_id = found[1], found[2]
        code = f"{secrets.randbelow(1_000_000):06d}"
        await self._store.put_console_code(
            ConsoleCodeRecord(
                key,
                account_id,
                person_id,
                _code_hash(key, account_id, person_id, code),
                now + CODE_TTL,
                0,
                window_start,
                sent + 1,
            )
        )
        record = await self._store.get_account(account_id)
        if record is None:
            return
        account = Account(id=record.id, name=record.name, suspended=record.suspended)
        text = sign_in_text(code)
        try:
            sender = (
                await self._senders.phone(account, None)
                if channel == "sms"
                else await self._senders.chat(account, channel)
            )
            await self._sends.message_flow(
                account,
                MessageSend(
                    channel=channel,
                    to=address,
                    sender=sender,
                    text=text,
                    request={
                        "message": sign_in_text("••••••"),
                        "to": address,
                        "followUpTime": 1,
                        "_console": {"personId": person_id},
                    },
                    wait_time=None,
                    follow_up_time=1.0,
                    template=shared_template(text, None) if channel == "whatsapp" else None,
                    kept_text=sign_in_text("••••••"),
                ),
            )
        except ServiceError as exc:
            # The page says the same as for an unknown address; the operator sees why.
            logger.warning("console sign-in code not sent: %s", exc.message)

    # -- sessions ------------------------------------------------------------------------
    async def sign_in(self, typed: str, code: str) -> tuple[ConsolePerson, str] | None:
        """A new session for the person the address's pending ``code`` was sent to:
        ``(person, token)``; None for a wrong, expired, spent or unknown code."""
        parsed = address_of(typed)
        if parsed is None:
            return None
        key = _address_key(parsed[1])
        now = self._runtime.clock()
        row = await self._store.console_code(key)
        if (
            row is None
            or row.code_hash is None
            or row.account_id is None
            or row.person_id is None
            or row.expires_at is None
            or row.expires_at <= now
        ):
            return None
        given = code.strip().replace(" ", "")
        candidate = _code_hash(key, row.account_id, row.person_id, given)
        if not _CODE.fullmatch(given) or not hmac.compare_digest(candidate, row.code_hash):
            await self._store.miss_console_code(key, row.code_hash, MAX_MISSES)
            return None
        if not await self._store.spend_console_code(key, row.code_hash, now):
            return None  # spent by an answer at the same moment
        person = await self._person(row.account_id, row.person_id)
        if person is None:
            return None
        config = self._runtime.config
        await self._store.prune_console_sessions(now, now - config.inbox_session_idle)
        token = secrets.token_urlsafe(TOKEN_BYTES)
        await self._store.insert_console_session(
            ConsoleSessionRecord(
                id_hash=_token_hash(token),
                account_id=row.account_id,
                person_id=row.person_id,
                created_at=now,
                expires_at=now + config.inbox_session_lifetime,
                seen_at=now,
            )
        )
        return person, token

    async def person_of(self, token: str) -> ConsolePerson | None:
        """Who a valid session is (None: unknown, signed out, revoked, expired, idle, or
        the person deleted); marks it used."""
        now = self._runtime.clock()
        idle = self._runtime.config.inbox_session_idle
        session = await self._store.console_session(_token_hash(token), now, now - idle)
        if session is None:
            return None
        if now - session.seen_at >= min(TOUCH_EVERY, idle / 4):
            await self._store.touch_console_session(session.id_hash, now)
        return await self._person(session.account_id, session.person_id)

    async def sign_out(self, token: str) -> bool:
        return await self._store.delete_console_session(_token_hash(token))

    async def revoke(self, account: Account, person_id: str) -> int:
        """Ends every console session of the person (on every replica, from the next
        request): how many there were."""
        return await self._store.delete_console_sessions_of(account.id, person_id)

    async def _person(self, account_id: str, person_id: str) -> ConsolePerson | None:
        record = await self._store.get_account(account_id)
        person = await self._store.get_person(account_id, person_id)
        if record is None or person is None:
            return None
        account = Account(id=record.id, name=record.name, suspended=record.suspended)
        return ConsolePerson(account, person.id, person.name)
