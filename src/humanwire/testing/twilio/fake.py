"""``FakeTwilio``: Twilio's side, played locally — state and rules in one object, apart
from the HTTP serving (``server.TwilioFakeServer``), moto-style.

Every REST request is checked against the published description (``spec``) and against
the rules Twilio states in prose (a message needs a body, media or a template; ``From``
must be one of the account's numbers; WhatsApp addresses on both ends or neither; a call
needs ``Url``, ``Twiml`` or ``ApplicationSid``…). Anything refused is answered with
Twilio's error body and recorded in ``violations``, so a test can assert the service
never sent Twilio a bad request. Refusals a test asked for (``refuse``, ``fail_next``)
are answered the same way but are not violations.

The phone's side: status callbacks after each message (``sent`` then ``delivered``, or an
injected failure), inbound messages, and calls run against the service's TwiML by a
scripted callee. Every callback is signed as Twilio signs (``X-Twilio-Signature``,
computed by the official ``twilio`` package) and sent to the exact URL the service gave.
Callbacks run on the serving loop with ``httpx.AsyncClient`` (10 s timeouts); the
test-facing methods are thread-safe and have async twins (``a…``).

Error codes used (Twilio's, https://www.twilio.com/docs/errors/<code>):

===========  ====================================================================
20001        a parameter the description does not know (Twilio itself only warns),
             a value of the wrong type / outside its enum or pattern, repeated
             scalar parameter, a body that is not form-encoded
20003        bad or missing credentials, another account's sid in the path (401)
20004        a method the path does not take (405)
20404        an unknown path or sid (404)
20429/20500  ``fail_next(429)`` / ``fail_next(5xx)``
21201/21213  a call without ``To`` / ``From``
21205        a call without ``Url``, ``Twiml`` or ``ApplicationSid``, or a bad ``Url``
21200        other refused call parameters (``Twiml`` not a ``<Response>``, ``Url`` and
             ``Twiml`` together on an update, ``MachineDetection`` / ``AsyncAmd``
             values the prose does not list)
21209        a bad ``Method`` / ``*Method``
21210        a call ``From`` a number the account does not own
21211/21212  a malformed ``To`` / ``From`` (not E.164, not a valid number)
21220        redirecting a call that is not in progress
21402        a bad URL on a phone number (``SmsUrl``, ``VoiceUrl``…)
21421/21422/21452  buying: neither ``PhoneNumber`` nor ``AreaCode`` / that number is not
             for sale / nothing for sale in that area code
21602/21603/21604  a message without body, media or template / without ``From`` or
             ``MessagingServiceSid`` / without ``To``
21606        a message ``From`` a number the account does not own (SMS)
63007        a WhatsApp message from a sender the account does not own
21609        a bad ``StatusCallback`` URL
21617/21623  a body over 1,600 characters / more than 10 ``MediaUrl``
21626        a ``StatusCallbackEvent`` other than initiated / ringing / answered /
             completed
21656        ``ContentVariables`` without ``ContentSid``, or not a JSON object
21910        ``To`` and ``From`` not both WhatsApp addresses (or both not)
===========  ====================================================================
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import email.utils
import json
import mimetypes
import re
import secrets
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeVar
from urllib.parse import parse_qsl, urlencode, urljoin

import httpx
import phonenumbers
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._fake_server import poll_until
from .spec import Operation, SpecViolation, TwilioSpec, load_spec, twiml_problem

__all__ = [
    "REFUSAL_MESSAGES",
    "Answer",
    "CalleeScript",
    "FakeAvailable",
    "FakeCall",
    "FakeCallback",
    "FakeMessage",
    "FakeNumber",
    "FakeRequest",
    "FakeTwilio",
    "Violation",
]

T = TypeVar("T")

API_VERSION = "2010-04-01"
WHATSAPP = "whatsapp:"
CALLBACK_TIMEOUT = 10.0
Answer = Literal["human", "machine", "no-answer", "busy", "failed"]
CALL_EVENTS = ("initiated", "ringing", "answered", "completed")
_EVENT_STATUS = {"initiated": "initiated", "ringing": "ringing", "answered": "in-progress"}
FINAL_CALL_STATUSES = ("completed", "busy", "failed", "no-answer", "canceled")
DELIVERY_FAILURES = ("undelivered", "failed")

REFUSAL_MESSAGES = {
    21211: "Invalid 'To' Phone Number",
    21214: "'To' phone number cannot be reached",
    21215: "Geo Permission configuration is not permitting call",
    21408: "Permission to send an SMS has not been enabled for the region indicated by "
    "the 'To' number",
    21610: "Attempt to send to unsubscribed recipient",
    21612: "The 'To' phone number is not currently reachable via SMS",
    21614: "'To' number is not a valid mobile number",
}
"""Twilio's wording for the refusals ``refuse`` is usually asked for."""

# Which code a description-level refusal gets, by operation and parameter.
_MISSING_CODES = {
    ("POST /Messages.json", "To"): 21604,
    ("POST /Calls.json", "To"): 21201,
    ("POST /Calls.json", "From"): 21213,
}
_URL_PARAMETERS = {
    "StatusCallback": 21609,
    "AsyncAmdStatusCallback": 21609,
    "Url": 21205,
    "FallbackUrl": 21205,
}


def _sid(prefix: str) -> str:
    return prefix + secrets.token_hex(16)


def _rfc2822(unix: float | None = None) -> str:
    """``Tue, 31 Aug 2010 20:36:28 +0000``, as Twilio writes dates."""
    return email.utils.formatdate(unix if unix is not None else time.time(), usegmt=True).replace(
        "GMT", "+0000"
    )


def _e164(phone: str) -> bool:
    if not re.fullmatch(r"\+[1-9]\d{6,14}", phone):
        return False
    try:
        return bool(phonenumbers.is_valid_number(phonenumbers.parse(phone, None)))
    except phonenumbers.NumberParseException:
        return False


def _segments(body: str) -> int:
    """SMS segments: 160 / 153 GSM-7 characters, 70 / 67 for anything else (UCS-2)."""
    if not body:
        return 1
    gsm = all(ch == "\n" or ch == "\r" or " " <= ch <= "~" for ch in body)
    single, multi = (160, 153) if gsm else (70, 67)
    return 1 if len(body) <= single else -(-len(body) // multi)


# -- records ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class BargeIn:
    """A callee's answer spoken over the agent: over ConversationRelay, once the agent's
    next turn has sent its first words, the fake sends ``interrupt`` (what was heard so
    far) and then ``text`` as the prompt. Over ``<Gather>`` it is an ordinary answer (a
    Gather's ``<Say>`` is cut by speech anyway)."""

    text: str
    speaking: float = 0.0
    """Over ConversationRelay: seconds from the ``interrupt`` (the person starts
    speaking) to the final ``prompt`` (they stop), at the least."""


@dataclass
class CalleeScript:
    """How the person at a number takes a call.

    ``answer``: ``human`` (speaks ``says`` in order), ``machine`` (an answering machine:
    ``AnsweredBy`` is a machine when detection was asked for, nothing is said back),
    ``no-answer``, ``busy``, ``failed``. ``says``: one entry per ``<Gather>``: a
    sentence (sent as ``SpeechResult``; as ``Digits`` to a DTMF-only Gather), or None
    for silence (the Gather times out: TwiML goes on after it). When the script runs
    out, or after ``hang_up_after`` Gathers, the callee hangs up.

    Over ConversationRelay each entry answers one of the agent's turns: a sentence is a
    final ``prompt``, digits (``[0-9*#]+``) are ``dtmf`` messages, None is silence
    (nothing sent), a :class:`BargeIn` interrupts the agent's next turn."""

    answer: Answer = "human"
    says: Sequence[str | BargeIn | None] = ()
    hang_up_after: int | None = None
    seconds_per_turn: float = 0.0
    """How long each answer takes (speaking, or the Gather's silence timeout)."""
    ring_seconds: float = 0.0
    """How long the phone rings before it is answered (or given up on)."""
    confidence: float = 0.92


@dataclass
class FakeNumber:
    """One of the account's phone numbers (``IncomingPhoneNumbers``)."""

    sid: str
    phone_number: str
    sms_url: str | None = None
    sms_method: str = "POST"
    voice_url: str | None = None
    voice_method: str = "POST"
    status_callback: str | None = None
    status_callback_method: str = "POST"
    friendly_name: str | None = None
    bought: bool = False
    released: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    """Every parameter set through the API (create and updates), latest value each."""
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)

    def resource(self, account_sid: str) -> dict[str, Any]:
        p = self.params
        return {
            "sid": self.sid,
            "account_sid": account_sid,
            "address_requirements": "none",
            "address_sid": p.get("AddressSid"),
            "api_version": API_VERSION,
            "beta": False,
            "bundle_sid": p.get("BundleSid"),
            "capabilities": {"voice": True, "sms": True, "mms": True, "fax": False},
            "date_created": _rfc2822(self.created),
            "date_updated": _rfc2822(self.updated),
            "emergency_status": p.get("EmergencyStatus", "Inactive"),
            "emergency_address_sid": p.get("EmergencyAddressSid"),
            "emergency_address_status": "unregistered",
            "friendly_name": self.friendly_name or self.phone_number,
            "identity_sid": p.get("IdentitySid"),
            "origin": "twilio",
            "phone_number": self.phone_number,
            "sms_application_sid": p.get("SmsApplicationSid") or None,
            "sms_fallback_method": p.get("SmsFallbackMethod", "POST"),
            "sms_fallback_url": p.get("SmsFallbackUrl", ""),
            "sms_method": self.sms_method,
            "sms_url": self.sms_url or "",
            "status": "in-use",
            "status_callback": self.status_callback or "",
            "status_callback_method": self.status_callback_method,
            "trunk_sid": p.get("TrunkSid"),
            "type": "local",
            "uri": f"/{API_VERSION}/Accounts/{account_sid}/IncomingPhoneNumbers/{self.sid}.json",
            "voice_application_sid": p.get("VoiceApplicationSid") or None,
            "voice_caller_id_lookup": bool(p.get("VoiceCallerIdLookup", False)),
            "voice_fallback_method": p.get("VoiceFallbackMethod", "POST"),
            "voice_fallback_url": p.get("VoiceFallbackUrl", ""),
            "voice_method": self.voice_method,
            "voice_receive_mode": p.get("VoiceReceiveMode", "voice"),
            "voice_url": self.voice_url or "",
        }


# The number fields an API parameter sets (the rest stay in ``params``).
_NUMBER_FIELDS = {
    "SmsUrl": "sms_url",
    "SmsMethod": "sms_method",
    "VoiceUrl": "voice_url",
    "VoiceMethod": "voice_method",
    "StatusCallback": "status_callback",
    "StatusCallbackMethod": "status_callback_method",
    "FriendlyName": "friendly_name",
}


@dataclass
class FakeAvailable:
    """A number Twilio would sell (``AvailablePhoneNumbers``)."""

    phone_number: str
    country: str = "US"
    area_code: str | None = None
    locality: str | None = None
    region: str | None = None

    def resource(self) -> dict[str, Any]:
        return {
            "friendly_name": self.phone_number,
            "phone_number": self.phone_number,
            "lata": None,
            "locality": self.locality,
            "rate_center": None,
            "latitude": None,
            "longitude": None,
            "region": self.region,
            "postal_code": None,
            "iso_country": self.country,
            "address_requirements": "none",
            "beta": False,
            "capabilities": {"voice": True, "sms": True, "mms": True, "fax": False},
        }


@dataclass
class FakeMessage:
    """A message the service sent; ``params`` are its parameters as sent (typed: lists
    for repeated ones such as ``MediaUrl``)."""

    sid: str
    params: dict[str, Any]
    status: str = "queued"
    statuses: list[str] = field(default_factory=list)
    """Every status after ``queued``, in order; one with a status callback is added
    once the service has answered that callback."""
    error_code: int | None = None
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    sent: float | None = None
    deleted: bool = False

    @property
    def to(self) -> str:
        return str(self.params.get("To", ""))

    @property
    def from_(self) -> str:
        return str(self.params.get("From", ""))

    @property
    def body(self) -> str | None:
        body = self.params.get("Body")
        return None if body is None else str(body)

    @property
    def media_urls(self) -> list[str]:
        return [str(url) for url in self.params.get("MediaUrl", []) or []]

    @property
    def channel(self) -> Literal["sms", "whatsapp"]:
        return "whatsapp" if self.to.startswith(WHATSAPP) else "sms"


@dataclass
class FakeCall:
    """A call: placed by the service (``direction`` ``outbound-api``, ``params`` as sent)
    or made to one of its numbers (``inbound``)."""

    sid: str
    params: dict[str, Any]
    direction: str = "outbound-api"
    status: str = "queued"
    statuses: list[str] = field(default_factory=list)
    """Every status after ``queued``: ``ringing``, ``in-progress``, then the final one."""
    answered_by: str | None = None
    said: list[str] = field(default_factory=list)
    """What the service's voice said, every ``<Say>`` in order."""
    heard: list[str | None] = field(default_factory=list)
    """What the callee said back, one per Gather (None: silence)."""
    played: list[str] = field(default_factory=list)
    transferred_to: str | None = None
    """The last ``<Dial>`` target."""
    relay_messages: list[dict[str, Any]] = field(default_factory=list)
    """Over ConversationRelay: every message the service sent on the socket, in order."""
    interrupted: list[str] = field(default_factory=list)
    """Over ConversationRelay: what the callee had heard of each turn it spoke over."""
    twiml: list[str] = field(default_factory=list)
    """Every TwiML document the call ran, in order."""
    errors: list[str] = field(default_factory=list)
    """What went wrong on the service's side: an unreachable or failing TwiML URL, a
    document that is not TwiML, a verb the fake does not play."""
    hang_up_requested: bool = False
    ended_by: Literal["api", "callee", "service", "time-limit"] | None = None
    done: bool = False
    created: float = field(default_factory=time.time)
    answered_at: float | None = None
    ended_at: float | None = None
    redirect: tuple[str, str, str] | None = None
    """A pending REST redirect: (``url`` | ``twiml``, the URL or document, method)."""
    progress_sent: int = 0

    @property
    def to(self) -> str:
        return str(self.params.get("To", ""))

    @property
    def from_(self) -> str:
        return str(self.params.get("From", ""))

    @property
    def duration(self) -> int:
        if self.answered_at is None:
            return 0
        return int((self.ended_at or time.time()) - self.answered_at)


class FakeRequest(NamedTuple):
    """A REST request the fake received (``params``: the form body of a POST, the
    query of anything else, in order, as strings)."""

    method: str
    path: str
    params: list[tuple[str, str]]


class FakeCallback(NamedTuple):
    """A request the fake made to the service (``status`` 0: it could not connect)."""

    method: str
    url: str
    params: dict[str, str]
    status: int


@dataclass
class Violation:
    """A request the fake refused because Twilio would have."""

    method: str
    path: str
    params: list[tuple[str, str]]
    code: int
    message: str
    status: int = 400


@dataclass
class _Failure:
    status: int
    code: int
    retry_after: float | None
    times: int
    match: str | None


class _Injected(SpecViolation):
    """A refusal the test asked for (``refuse``): answered, not a violation."""


class _Next(NamedTuple):
    """Where a call's TwiML goes next: a URL to request, or an inline document."""

    url: str | None
    method: str = "POST"
    extra: dict[str, str] = {}  # noqa: RUF012 (NamedTuple defaults are not shared state)
    document: str | None = None


# -- the fake -------------------------------------------------------------------------------------
class FakeTwilio:
    """One Twilio account, played locally. Serve it with ``TwilioFakeServer``.

    Safe to drive from the test's thread while the server runs the app on its own
    loop: state changes hold ``lock``; the methods that talk to the service run on the
    server's loop and wait for the result (``a…`` twins await it from any loop)."""

    def __init__(
        self,
        account_sid: str | None = None,
        auth_token: str | None = None,
        *,
        spec: TwilioSpec | None = None,
        auto_status: bool = True,
        status_delay: float = 0.01,
    ) -> None:
        self.account_sid = account_sid or "AC" + secrets.token_hex(16)
        if not re.fullmatch(r"AC[0-9a-fA-F]{32}", self.account_sid):
            raise ValueError("account_sid must be AC followed by 32 hex digits")
        self.auth_token = auth_token or secrets.token_hex(16)
        self.spec = spec or load_spec()
        self.auto_status = auto_status
        """Post ``sent`` / ``delivered`` (or the injected failure) after each message."""
        self.status_delay = status_delay
        self.lock = threading.RLock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._http: httpx.AsyncClient | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.reset()

    def reset(self) -> None:
        """Forgets everything (numbers, records, injected failures, scripts); stops the
        calls and callbacks under way."""
        with self.lock:
            self.numbers: dict[str, FakeNumber] = {}
            """The account's numbers by sid (released ones stay, ``released`` True)."""
            self.available: dict[str, FakeAvailable] = {}
            self.messages: list[FakeMessage] = []
            self.calls: list[FakeCall] = []
            self.requests: list[FakeRequest] = []
            self.violations: list[Violation] = []
            self.callbacks: list[FakeCallback] = []
            self.errors: list[str] = []
            """Problems on the phone's side: callbacks that could not connect, TwiML
            that could not be run, exceptions in the fake's background work."""
            self.callees: dict[str, CalleeScript] = {}
            self.relay_setup = True
            """ConversationRelay: send ``setup`` once the socket is open (off: a carrier
            that never does, for the service's setup timeout)."""
            self._refused: dict[str, tuple[int, int]] = {}
            self._undeliverable: dict[str, tuple[str, int]] = {}
            self._failures: list[_Failure] = []
            self._delay = 0.0
            tasks = list(self._tasks)
        loop = self.loop
        if loop is not None and tasks:
            for task in tasks:
                loop.call_soon_threadsafe(task.cancel)

    # -- test controls ---------------------------------------------------------------------
    def add_number(
        self,
        phone_number: str,
        sms_url: str | None = None,
        voice_url: str | None = None,
        *,
        status_callback: str | None = None,
    ) -> str:
        """A number the operator already owns in this account; returns its ``PN`` sid."""
        if not _e164(phone_number):
            raise ValueError(f"{phone_number!r} is not an E.164 phone number")
        with self.lock:
            if self.number(phone_number) is not None:
                raise ValueError(f"{phone_number} is already the account's")
            number = FakeNumber(
                _sid("PN"),
                phone_number,
                sms_url=sms_url,
                voice_url=voice_url,
                status_callback=status_callback,
            )
            self.numbers[number.sid] = number
            return number.sid

    def add_available(
        self,
        phone_number: str,
        country: str = "US",
        area_code: str | int | None = None,
        *,
        locality: str | None = None,
        region: str | None = None,
    ) -> None:
        """A number Twilio would sell (``AvailablePhoneNumbers``, ``IncomingPhoneNumbers``
        create). The area code of a +1 number is its three digits after the +1."""
        if not _e164(phone_number):
            raise ValueError(f"{phone_number!r} is not an E.164 phone number")
        if area_code is None and phone_number.startswith("+1"):
            area_code = phone_number[2:5]
        with self.lock:
            self.available[phone_number] = FakeAvailable(
                phone_number,
                country.upper(),
                None if area_code is None else str(area_code),
                locality,
                region,
            )

    def number(self, phone_number: str) -> FakeNumber | None:
        """The account's (unreleased) number ``phone_number``, ``whatsapp:`` or not."""
        phone = phone_number.removeprefix(WHATSAPP)
        with self.lock:
            for number in self.numbers.values():
                if number.phone_number == phone and not number.released:
                    return number
            return None

    def message(self, sid: str) -> FakeMessage:
        with self.lock:
            for message in self.messages:
                if message.sid == sid:
                    return message
        raise KeyError(sid)

    def call(self, sid: str) -> FakeCall:
        with self.lock:
            for call in self.calls:
                if call.sid == sid:
                    return call
        raise KeyError(sid)

    def sent_to(self, to: str) -> list[FakeMessage]:
        """The messages sent to ``to`` (SMS and WhatsApp alike), in order."""
        phone = to.removeprefix(WHATSAPP)
        with self.lock:
            return [m for m in self.messages if m.to.removeprefix(WHATSAPP) == phone]

    def calls_to(self, to: str) -> list[FakeCall]:
        with self.lock:
            return [c for c in self.calls if c.to == to]

    def callee(self, phone_number: str, script: CalleeScript) -> None:
        """How the person at ``phone_number`` takes the calls placed to it (default: a
        person who answers and hangs up at the first Gather)."""
        with self.lock:
            self.callees[phone_number] = script

    def refuse(self, to: str, code: int = 21211, status: int = 400) -> None:
        """Messages and calls to ``to`` are refused with Twilio error ``code`` (21211
        invalid number, 21614 not a mobile number, 21408 region not enabled, 21610
        unsubscribed…). Not recorded as violations."""
        with self.lock:
            self._refused[to.removeprefix(WHATSAPP)] = (code, status)

    def fail_next(
        self,
        status: int = 500,
        *,
        times: int = 1,
        retry_after: float | None = None,
        match: str | None = None,
    ) -> None:
        """The next ``times`` valid REST requests (whose path contains ``match``, when
        given) fail with ``status`` (429, 500, 503…), ``Retry-After`` when given."""
        code = 20429 if status == 429 else 20500 if status >= 500 else 20001
        with self.lock:
            self._failures.append(_Failure(status, code, retry_after, times, match))

    def delay(self, seconds: float) -> None:
        """Every REST answer takes ``seconds`` longer (a slow Twilio); 0 ends it."""
        with self.lock:
            self._delay = seconds

    def fail_delivery(self, to: str, status: str = "undelivered", error_code: int = 30003) -> None:
        """Messages to ``to`` are accepted, then reported ``status`` (``undelivered`` or
        ``failed``) with ``ErrorCode`` ``error_code`` (30003 unreachable, 30005 unknown
        destination, 30006 landline, 30007 filtered…)."""
        if status not in DELIVERY_FAILURES:
            raise ValueError(f"status must be one of {DELIVERY_FAILURES}")
        with self.lock:
            self._undeliverable[to.removeprefix(WHATSAPP)] = (status, error_code)

    def hang_up(self, call_sid: str) -> None:
        """The callee hangs up (now, or as soon as the call's current step ends)."""
        call = self.call(call_sid)
        with self.lock:
            if not call.done:
                call.hang_up_requested = True
                call.ended_by = call.ended_by or "callee"

    # -- waiting, from the test's thread (or any loop) ------------------------------------
    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        """Polls ``predicate`` (under the fake's lock) until it is truthy; returns it."""
        return poll_until(predicate, self.lock, timeout, "fake Twilio")

    async def await_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError("the fake Twilio did not reach the expected state")
            await asyncio.sleep(0.01)

    def _idle(self) -> bool:
        with self.lock:
            return not self._tasks and all(c.done for c in self.calls)

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Until every callback, delivery report and call the fake started is over."""
        self.wait_for(self._idle, timeout)

    async def await_idle(self, timeout: float = 5.0) -> None:
        await self.await_for(self._idle, timeout)

    # -- the phone's side, from the test's thread (run on the fake's loop) -----------------
    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        loop = self.loop
        if loop is None:
            coro.close()
            raise RuntimeError("the fake Twilio is not being served (TwilioFakeServer)")
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # waiting here would block the loop the coroutine needs
            coro.close()
            raise RuntimeError("called on the fake's own loop: use the async twin (a…) instead")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    async def _arun(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self.loop
        if loop is None:
            coro.close()
            raise RuntimeError("the fake Twilio is not being served (TwilioFakeServer)")
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    def send_inbound(
        self,
        from_: str,
        to: str,
        body: str,
        *,
        media_urls: Sequence[str] = (),
        channel: Literal["sms", "whatsapp"] = "sms",
        message_sid: str | None = None,
        url: str | None = None,
        profile_name: str = "Test Human",
    ) -> httpx.Response:
        """A person at ``from_`` texts ``to``: posted, signed, to the ``SmsUrl`` of ``to``
        (with its ``SmsMethod``), or to ``url``. Reusing ``message_sid`` redelivers the
        same message. Returns the service's answer."""
        return self._run(
            self._inbound(from_, to, body, media_urls, channel, message_sid, url, profile_name)
        )

    async def asend_inbound(
        self,
        from_: str,
        to: str,
        body: str,
        *,
        media_urls: Sequence[str] = (),
        channel: Literal["sms", "whatsapp"] = "sms",
        message_sid: str | None = None,
        url: str | None = None,
        profile_name: str = "Test Human",
    ) -> httpx.Response:
        return await self._arun(
            self._inbound(from_, to, body, media_urls, channel, message_sid, url, profile_name)
        )

    def post_message_status(
        self, message_sid: str, status: str, error_code: int | None = None
    ) -> httpx.Response:
        """Posts one status callback of a sent message (by hand, e.g. ``read`` or a late
        ``failed``) to the ``StatusCallback`` it was sent with."""
        return self._run(self._message_status_by_sid(message_sid, status, error_code))

    async def apost_message_status(
        self, message_sid: str, status: str, error_code: int | None = None
    ) -> httpx.Response:
        return await self._arun(self._message_status_by_sid(message_sid, status, error_code))

    def post_signed(
        self,
        url: str,
        params: Mapping[str, str],
        *,
        signature: str | None = None,
        method: str = "POST",
    ) -> httpx.Response:
        """Sends ``params`` to ``url`` signed as Twilio signs, or with ``signature`` as
        given (``"bad"``, a signature of other params…): security tests."""
        return self._run(self._send(url, dict(params), method, signature=signature))

    async def apost_signed(
        self,
        url: str,
        params: Mapping[str, str],
        *,
        signature: str | None = None,
        method: str = "POST",
    ) -> httpx.Response:
        return await self._arun(self._send(url, dict(params), method, signature=signature))

    def inbound_call(
        self, from_: str, to: str, script: CalleeScript, *, timeout: float = 60.0
    ) -> FakeCall:
        """A person at ``from_`` calls ``to``: the call runs against the ``VoiceUrl`` of
        ``to`` (``Direction`` inbound) and is returned once it is over."""
        return self._run(self._inbound_call(from_, to, script), timeout=timeout)

    async def ainbound_call(self, from_: str, to: str, script: CalleeScript) -> FakeCall:
        return await self._arun(self._inbound_call(from_, to, script))

    # -- serving -----------------------------------------------------------------------------
    def app(self) -> Starlette:
        """The REST API as an ASGI app; its lifespan binds the fake to the serving loop."""

        async def handle(request: Request) -> Response:
            return await self._handle(request)

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            self.loop = asyncio.get_running_loop()
            self._http = httpx.AsyncClient(timeout=CALLBACK_TIMEOUT)
            try:
                yield
            finally:
                with self.lock:
                    tasks = list(self._tasks)
                for task in tasks:
                    task.cancel()
                if tasks:
                    await asyncio.wait(tasks, timeout=2.0)
                await self._http.aclose()
                self._http = None
                self.loop = None

        return Starlette(
            routes=[
                Route("/{path:path}", handle, methods=["GET", "POST", "DELETE", "PUT", "PATCH"])
            ],
            lifespan=lifespan,
        )

    def _spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        with self.lock:
            self._tasks.add(task)

        def done(task: asyncio.Task[Any]) -> None:
            with self.lock:
                self._tasks.discard(task)
            if not task.cancelled() and task.exception() is not None:
                self._record_error(f"{what}: {task.exception()!r}")

        task.add_done_callback(done)

    def _record_error(self, problem: str) -> None:
        with self.lock:
            self.errors.append(problem)

    @staticmethod
    def _error(
        status: int, code: int, message: str, headers: dict[str, str] | None = None
    ) -> Response:
        return JSONResponse(
            {
                "code": code,
                "message": message,
                "more_info": f"https://www.twilio.com/docs/errors/{code}",
                "status": status,
            },
            status,
            headers=headers,
        )

    def _authorized(self, request: Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return secrets.compare_digest(user, self.account_sid) and secrets.compare_digest(
            password, self.auth_token
        )

    async def _handle(self, request: Request) -> Response:
        method, path = request.method, request.url.path
        raw = await request.body()
        body_items = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
        query_items = list(request.query_params.multi_items())
        items = body_items if method == "POST" else query_items
        with self.lock:
            self.requests.append(FakeRequest(method, path, items))
            delay = self._delay
        if delay:
            await asyncio.sleep(delay)
        operation: Operation | None = None
        try:
            if not self._authorized(request):
                raise SpecViolation("Authenticate", code=20003, status=401)
            operation = self.spec.operation(method, path)
            if operation.path_params.get("AccountSid") != self.account_sid:
                raise SpecViolation(
                    "The AccountSid in the path is not the authenticated account's",
                    code=20003,
                    status=401,
                )
            if method == "POST":
                kind = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
                if raw and kind not in operation.content_types:
                    raise SpecViolation(
                        f"The body must be application/x-www-form-urlencoded, not {kind!r}",
                        reason="invalid",
                    )
                values = self.spec.check_body(operation, body_items)
            else:
                values = self.spec.check_query(operation, query_items)
            failure = self._take_failure(path)
            if failure is not None:
                headers = (
                    {"Retry-After": str(max(1, round(failure.retry_after)))}
                    if failure.retry_after is not None
                    else None
                )
                message = "Too Many Requests" if failure.status == 429 else "Service unavailable"
                return self._error(failure.status, failure.code, message, headers)
            status, body = self._operate(operation, values)
        except _Injected as exc:
            return self._error(exc.status, exc.code, exc.message)
        except SpecViolation as exc:
            code = self._code_for(exc, operation)
            with self.lock:
                self.violations.append(
                    Violation(method, path, items, code, exc.message, exc.status)
                )
            headers = (
                {"WWW-Authenticate": 'Basic realm="Twilio API"'} if exc.status == 401 else None
            )
            return self._error(exc.status, code, exc.message, headers)
        if status == 204:
            return Response(status_code=204)
        return JSONResponse(body, status)

    @staticmethod
    def _code_for(exc: SpecViolation, operation: Operation | None) -> int:
        """Twilio's code for a refusal found in the description."""
        name, key = exc.parameter, operation.key if operation else ""
        if name is None or exc.reason not in ("missing", "invalid", "format"):
            return exc.code
        if exc.reason == "missing":
            return _MISSING_CODES.get((key, name), exc.code)
        if name.endswith("Method") and "/Calls" in key:
            return 21209
        if "/IncomingPhoneNumbers" in key and (name.endswith("Url") or name == "StatusCallback"):
            return 21402
        if name in _URL_PARAMETERS and exc.reason == "format":
            return _URL_PARAMETERS[name]
        if name == "StatusCallbackEvent":
            return 21626
        if "/Calls" in key and name == "Twiml":
            return 21200
        return exc.code

    def _take_failure(self, path: str) -> _Failure | None:
        with self.lock:
            for failure in self._failures:
                if failure.match is None or failure.match in path:
                    failure.times -= 1
                    if failure.times <= 0:
                        self._failures.remove(failure)
                    return failure
        return None

    # -- the operations --------------------------------------------------------------------
    def _operate(self, operation: Operation, values: dict[str, Any]) -> tuple[int, Any]:
        key = operation.key
        sid = operation.path_params.get("Sid", "")
        if key == "POST /Messages.json":
            return 201, self._create_message(values)
        if key == "GET /Messages.json":
            return 200, self._list_messages(values)
        if key == "GET /Messages/{Sid}.json":
            return 200, self._message_resource(self._message(sid))
        if key == "POST /Messages/{Sid}.json":
            return 200, self._update_message(self._message(sid), values)
        if key == "DELETE /Messages/{Sid}.json":
            message = self._message(sid)
            with self.lock:
                message.deleted = True
            return 204, None
        if key == "POST /Calls.json":
            return 201, self._create_call(values)
        if key == "GET /Calls.json":
            return 200, self._list_calls(values)
        if key == "GET /Calls/{Sid}.json":
            return 200, self._call_resource(self._call(sid))
        if key == "POST /Calls/{Sid}.json":
            return 200, self._update_call(self._call(sid), values)
        if key == "DELETE /Calls/{Sid}.json":
            call = self._call(sid)
            if not call.done:
                raise SpecViolation("A call in progress cannot be deleted", code=21220)
            with self.lock:
                self.calls.remove(call)
            return 204, None
        if key == "GET /IncomingPhoneNumbers.json":
            return 200, self._list_numbers(values)
        if key == "POST /IncomingPhoneNumbers.json":
            return 201, self._buy(values)
        if key == "GET /IncomingPhoneNumbers/{Sid}.json":
            return 200, self._number(sid).resource(self.account_sid)
        if key == "POST /IncomingPhoneNumbers/{Sid}.json":
            number = self._number(sid)
            self._configure(number, values)
            return 200, number.resource(self.account_sid)
        if key == "DELETE /IncomingPhoneNumbers/{Sid}.json":
            number = self._number(sid)
            with self.lock:
                number.released = True
                number.updated = time.time()
            return 204, None
        if key == "GET /AvailablePhoneNumbers/{CountryCode}/Local.json":
            return 200, self._list_available(operation.path_params["CountryCode"], values)
        raise SpecViolation(f"The fake does not implement {key}", code=20004, status=405)

    def _page(
        self, key: str, items: list[Any], uri: str, values: Mapping[str, Any]
    ) -> dict[str, Any]:
        size = int(values.get("PageSize", 50))
        page = int(values.get("Page", 0))
        chunk = items[page * size : (page + 1) * size]
        base = f"/{API_VERSION}/Accounts/{self.account_sid}/{uri}"

        def link(number: int) -> str:
            return f"{base}?PageSize={size}&Page={number}&PageToken=PA{number}"

        return {
            key: chunk,
            "end": page * size + max(len(chunk) - 1, 0),
            "first_page_uri": link(0),
            "next_page_uri": link(page + 1) if (page + 1) * size < len(items) else None,
            "page": page,
            "page_size": size,
            "previous_page_uri": link(page - 1) if page > 0 else None,
            "start": page * size,
            "uri": link(page),
        }

    def _message(self, sid: str) -> FakeMessage:
        with self.lock:
            for message in self.messages:
                if message.sid == sid and not message.deleted:
                    return message
        raise SpecViolation(
            f"The requested resource /Messages/{sid}.json was not found", code=20404, status=404
        )

    def _call(self, sid: str) -> FakeCall:
        with self.lock:
            for call in self.calls:
                if call.sid == sid:
                    return call
        raise SpecViolation(
            f"The requested resource /Calls/{sid}.json was not found", code=20404, status=404
        )

    def _number(self, sid: str) -> FakeNumber:
        with self.lock:
            number = self.numbers.get(sid)
        if number is None or number.released:
            raise SpecViolation(
                f"The requested resource /IncomingPhoneNumbers/{sid}.json was not found",
                code=20404,
                status=404,
            )
        return number

    def _check_refused(self, to: str) -> None:
        with self.lock:
            refused = self._refused.get(to.removeprefix(WHATSAPP))
        if refused is not None:
            code, status = refused
            message = REFUSAL_MESSAGES.get(code, f"Twilio refuses {to}")
            raise _Injected(message, code=code, status=status)

    # -- messages --------------------------------------------------------------------------
    def _create_message(self, values: dict[str, Any]) -> dict[str, Any]:
        to, sender = str(values["To"]), str(values.get("From", ""))
        body = str(values.get("Body", ""))
        media = list(values.get("MediaUrl", []))
        if not sender and not values.get("MessagingServiceSid"):
            raise SpecViolation("A 'From' phone number is required.", code=21603)
        if not (body or media or values.get("ContentSid")):
            raise SpecViolation("A text message body or media urls must be specified.", code=21602)
        if len(body) > 1600:
            raise SpecViolation("The message body exceeds the 1600 character limit.", code=21617)
        if len(media) > 10:
            raise SpecViolation("The number of media files exceeds the limit of 10.", code=21623)
        if sender and to.startswith(WHATSAPP) != sender.startswith(WHATSAPP):
            raise SpecViolation(
                "Invalid From and To pair. From and To should be of the same channel",
                code=21910,
            )
        if values.get("ContentVariables") is not None:
            if not values.get("ContentSid"):
                raise SpecViolation("ContentVariables needs a ContentSid.", code=21656)
            try:
                variables = json.loads(str(values["ContentVariables"]))
            except ValueError:
                variables = None
            if not isinstance(variables, dict):
                raise SpecViolation(
                    "The ContentVariables parameter is invalid: not a JSON object.", code=21656
                )
        if not _e164(to.removeprefix(WHATSAPP)):
            raise SpecViolation(f"The 'To' number {to} is not a valid phone number.", code=21211)
        if sender and self.number(sender) is None:
            if sender.startswith(WHATSAPP):
                raise SpecViolation(
                    "Twilio could not find a Channel with the specified From address",
                    code=63007,
                )
            raise SpecViolation(
                f"The From phone number {sender} is not a valid, SMS-capable inbound phone "
                "number or short code for your account.",
                code=21606,
            )
        self._check_refused(to)
        message = FakeMessage(_sid("SM" if not media else "MM"), dict(values))
        with self.lock:
            self.messages.append(message)
            failing = self._undeliverable.get(to.removeprefix(WHATSAPP))
        if self.auto_status:
            callback = values.get("StatusCallback")
            self._spawn(
                self._report(message, str(callback) if callback else None, failing),
                f"status callbacks of {message.sid}",
            )
        return self._message_resource(message)

    def _message_resource(self, message: FakeMessage) -> dict[str, Any]:
        values = message.params
        body = str(values.get("Body", ""))
        uri = f"/{API_VERSION}/Accounts/{self.account_sid}/Messages/{message.sid}"
        with self.lock:
            return {
                "sid": message.sid,
                "account_sid": self.account_sid,
                "api_version": API_VERSION,
                "body": body,
                "date_created": _rfc2822(message.created),
                "date_sent": _rfc2822(message.sent) if message.sent else None,
                "date_updated": _rfc2822(message.updated),
                "direction": "outbound-api",
                "error_code": message.error_code,
                "error_message": None,
                "from": values.get("From") or None,
                "messaging_service_sid": values.get("MessagingServiceSid"),
                "num_media": str(len(message.media_urls)),
                "num_segments": str(_segments(body)),
                "price": None,
                "price_unit": "USD",
                "status": message.status,
                "subresource_uris": {"media": f"{uri}/Media.json"},
                "to": values.get("To"),
                "uri": f"{uri}.json",
            }

    def _list_messages(self, values: Mapping[str, Any]) -> dict[str, Any]:
        with self.lock:
            found = [
                m
                for m in reversed(self.messages)
                if not m.deleted
                and values.get("To", m.to) == m.to
                and values.get("From", m.from_) == m.from_
            ]
        resources = [self._message_resource(m) for m in found]
        return self._page("messages", resources, "Messages.json", values)

    def _update_message(self, message: FakeMessage, values: Mapping[str, Any]) -> dict[str, Any]:
        with self.lock:
            if "Body" in values:
                if values["Body"] != "" or message.status not in (
                    "sent",
                    "delivered",
                    "undelivered",
                    "failed",
                    "read",
                    "received",
                ):
                    raise SpecViolation(
                        "Only the body of a message that is over can be redacted (Body='')",
                        code=20009,
                    )
                message.params["Body"] = ""
            if values.get("Status") == "canceled":
                if message.status != "scheduled":
                    raise SpecViolation("Only a scheduled message can be canceled", code=30409)
                message.status = "canceled"
            message.updated = time.time()
        return self._message_resource(message)

    async def _report(
        self, message: FakeMessage, url: str | None, failing: tuple[str, int] | None
    ) -> None:
        await asyncio.sleep(self.status_delay)  # after the create's answer, as Twilio does
        final = failing if failing is not None else ("delivered", None)
        for status, error_code in (("sent", None), final):
            with self.lock:
                if message.deleted or message.status == "canceled":
                    return
            try:
                await self._message_status(message, url, status, error_code)
            except httpx.HTTPError as exc:
                self._record_error(f"status callback of {message.sid} to {url}: {exc!r}")

    async def _message_status_by_sid(
        self, sid: str, status: str, error_code: int | None
    ) -> httpx.Response:
        message = self.message(sid)
        url = str(message.params.get("StatusCallback") or "")
        if not url:
            raise RuntimeError(f"message {sid} was sent without a StatusCallback")
        response = await self._message_status(message, url, status, error_code)
        assert response is not None
        return response

    async def _message_status(
        self, message: FakeMessage, url: str | None, status: str, error_code: int | None
    ) -> httpx.Response | None:
        now = time.time()
        with self.lock:
            message.status = status
            message.updated = now
            if status == "sent" and message.sent is None:
                message.sent = now
            if error_code is not None:
                message.error_code = error_code
        if url is None:
            with self.lock:
                message.statuses.append(status)
            return None
        params = {
            "MessageSid": message.sid,
            "SmsSid": message.sid,
            "AccountSid": self.account_sid,
            "From": message.from_,
            "To": message.to,
            "MessageStatus": status,
            "SmsStatus": status,
            "ApiVersion": API_VERSION,
        }
        if message.params.get("MessagingServiceSid"):
            params["MessagingServiceSid"] = str(message.params["MessagingServiceSid"])
        if message.channel == "whatsapp":
            params["ChannelPrefix"] = "whatsapp"
        if error_code is not None:
            params["ErrorCode"] = str(error_code)
        try:
            return await self._send(url, params)
        finally:
            with self.lock:  # once the service has answered it (or could not be reached)
                message.statuses.append(status)

    async def _inbound(
        self,
        from_: str,
        to: str,
        body: str,
        media_urls: Sequence[str],
        channel: Literal["sms", "whatsapp"],
        message_sid: str | None,
        url: str | None,
        profile_name: str,
    ) -> httpx.Response:
        number = self.number(to)
        target = url or (number.sms_url if number else None)
        if not target:
            raise RuntimeError(f"{to} has no SmsUrl: configure it first, or pass url=")
        method = "POST" if url or number is None else number.sms_method
        prefix = WHATSAPP if channel == "whatsapp" else ""
        sender, receiver = from_.removeprefix(WHATSAPP), to.removeprefix(WHATSAPP)
        sid = message_sid or _sid("SM" if not media_urls else "MM")
        params = {
            "MessageSid": sid,
            "SmsMessageSid": sid,
            "SmsSid": sid,
            "AccountSid": self.account_sid,
            "From": prefix + sender,
            "To": prefix + receiver,
            "Body": body,
            "NumMedia": str(len(media_urls)),
            "NumSegments": str(_segments(body)),
            "SmsStatus": "received",
            "ApiVersion": API_VERSION,
        }
        for index, media in enumerate(media_urls):
            kind = mimetypes.guess_type(media.split("?", 1)[0])[0] or "image/jpeg"
            params[f"MediaUrl{index}"] = media
            params[f"MediaContentType{index}"] = kind
        if channel == "whatsapp":
            params["ProfileName"] = profile_name
            params["WaId"] = sender.lstrip("+")
            params["MessageType"] = "image" if media_urls else "text"
        return await self._send(target, params, method)

    async def _send(
        self,
        url: str,
        params: dict[str, str],
        method: str = "POST",
        *,
        signature: str | None = None,
    ) -> httpx.Response:
        """Calls the service as Twilio does: POST a form, or GET with the parameters in
        the query; signed over the exact URL (plus the POST parameters)."""
        from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]

        method = method.upper()
        if method == "GET":
            if params:
                url = f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"
            signed: dict[str, str] = {}
        else:
            signed = params
        if signature is None:
            signature = RequestValidator(self.auth_token).compute_signature(url, signed)
        headers = {
            "X-Twilio-Signature": signature,
            "User-Agent": "TwilioProxy/1.1",
            "I-Twilio-Idempotency-Token": secrets.token_hex(16),
        }
        if self._http is None:
            raise RuntimeError("the fake Twilio is not being served (TwilioFakeServer)")
        try:
            if method == "GET":
                response = await self._http.get(url, headers=headers)
            else:
                response = await self._http.post(url, data=params, headers=headers)
        except httpx.HTTPError:
            with self.lock:
                self.callbacks.append(FakeCallback(method, url, dict(params), 0))
            raise
        with self.lock:
            self.callbacks.append(FakeCallback(method, url, dict(params), response.status_code))
        return response

    # -- numbers ---------------------------------------------------------------------------
    def _configure(self, number: FakeNumber, values: Mapping[str, Any]) -> None:
        with self.lock:
            for name, value in values.items():
                number.params[name] = value
                attribute = _NUMBER_FIELDS.get(name)
                if attribute is not None:
                    if attribute.endswith("method"):
                        setattr(number, attribute, str(value or "POST"))
                    else:
                        setattr(number, attribute, str(value) if value else None)
            number.updated = time.time()

    def _list_numbers(self, values: Mapping[str, Any]) -> dict[str, Any]:
        wanted = values.get("PhoneNumber")
        name = values.get("FriendlyName")
        with self.lock:
            found = [
                n.resource(self.account_sid)
                for n in self.numbers.values()
                if not n.released
                and (wanted is None or n.phone_number == wanted)
                and (name is None or (n.friendly_name or n.phone_number) == name)
            ]
        return self._page("incoming_phone_numbers", found, "IncomingPhoneNumbers.json", values)

    def _buy(self, values: Mapping[str, Any]) -> dict[str, Any]:
        phone = values.get("PhoneNumber")
        area = values.get("AreaCode")
        with self.lock:
            if phone is None and area is None:
                raise SpecViolation(
                    "You must provide an AreaCode or a PhoneNumber to purchase a number.",
                    code=21421,
                )
            if phone is None:
                if not re.fullmatch(r"\d{3}", str(area)):
                    raise SpecViolation(f"AreaCode {area} is not valid.", code=21451)
                phone = next(
                    (p for p, a in self.available.items() if a.area_code == str(area)), None
                )
                if phone is None:
                    raise SpecViolation(f"No phone numbers found in area code {area}.", code=21452)
            elif not _e164(str(phone)):
                raise SpecViolation(f"PhoneNumber {phone} is not valid.", code=21421)
            if phone not in self.available:
                raise SpecViolation(
                    f"The PhoneNumber {phone} is not available to purchase.", code=21422
                )
            del self.available[phone]
            number = FakeNumber(_sid("PN"), str(phone), bought=True)
            self.numbers[number.sid] = number
            self._configure(
                number, {k: v for k, v in values.items() if k not in ("PhoneNumber", "AreaCode")}
            )
        return number.resource(self.account_sid)

    def _list_available(self, country: str, values: Mapping[str, Any]) -> dict[str, Any]:
        area = values.get("AreaCode")
        contains = _contains_pattern(values.get("Contains"))
        with self.lock:
            offers = [
                a.resource()
                for a in self.available.values()
                if a.country == country
                and (area is None or a.area_code == str(area))
                and (contains is None or contains.search(a.phone_number) is not None)
                and values.get("InRegion", a.region) == a.region
                and values.get("InLocality", a.locality) == a.locality
            ]
        uri = f"AvailablePhoneNumbers/{country}/Local.json"
        return self._page("available_phone_numbers", offers, uri, values)

    # -- calls -----------------------------------------------------------------------------
    def _create_call(self, values: dict[str, Any]) -> dict[str, Any]:
        to, sender = str(values["To"]), str(values["From"])
        if not (values.get("Url") or values.get("Twiml") or values.get("ApplicationSid")):
            raise SpecViolation("A 'Url', 'Twiml' or 'ApplicationSid' is required.", code=21205)
        events = list(values.get("StatusCallbackEvent", []))
        unknown = [e for e in events if e not in CALL_EVENTS]
        if unknown:
            raise SpecViolation(f"Invalid StatusCallbackEvent {unknown[0]!r}", code=21626)
        detection = values.get("MachineDetection")
        if detection is not None and detection not in ("Enable", "DetectMessageEnd"):
            raise SpecViolation("MachineDetection must be Enable or DetectMessageEnd", code=21200)
        if values.get("AsyncAmd") is not None and values["AsyncAmd"] not in ("true", "false"):
            raise SpecViolation("AsyncAmd must be true or false", code=21200)
        twiml = values.get("Twiml")
        if twiml is not None and len(str(twiml)) > 4000:
            raise SpecViolation("Twiml is longer than 4000 characters", code=21200)
        if not _e164(to):
            raise SpecViolation(f"The 'To' number {to} is not a valid phone number.", code=21211)
        if not _e164(sender):
            raise SpecViolation(
                f"The 'From' number {sender} is not a valid phone number.", code=21212
            )
        if self.number(sender) is None:
            raise SpecViolation(
                f"The source phone number provided, {sender}, is not yet verified for your "
                "account. You may only make calls from phone numbers that you've verified or "
                "purchased from Twilio.",
                code=21210,
            )
        self._check_refused(to)
        call = FakeCall(_sid("CA"), dict(values))
        with self.lock:
            self.calls.append(call)
            script = self.callees.get(to, CalleeScript())
        self._spawn(self._run_call(call, script), f"call {call.sid}")
        return self._call_resource(call)

    def _call_resource(self, call: FakeCall) -> dict[str, Any]:
        with self.lock:
            number = self.number(call.to if call.direction == "inbound" else call.from_)
            return {
                "sid": call.sid,
                "account_sid": self.account_sid,
                "answered_by": call.answered_by,
                "api_version": API_VERSION,
                "caller_name": None,
                "date_created": _rfc2822(call.created),
                "date_updated": _rfc2822(call.ended_at or call.answered_at or call.created),
                "direction": call.direction,
                "duration": str(call.duration) if call.done else None,
                "end_time": _rfc2822(call.ended_at) if call.ended_at else None,
                "forwarded_from": None,
                "from": call.from_,
                "from_formatted": call.from_,
                "group_sid": None,
                "parent_call_sid": None,
                "phone_number_sid": number.sid if number else None,
                "price": None,
                "price_unit": "USD",
                "queue_time": "0",
                "start_time": _rfc2822(call.answered_at) if call.answered_at else None,
                "status": call.status,
                "subresource_uris": {},
                "to": call.to,
                "to_formatted": call.to,
                "trunk_sid": None,
                "uri": f"/{API_VERSION}/Accounts/{self.account_sid}/Calls/{call.sid}.json",
            }

    def _list_calls(self, values: Mapping[str, Any]) -> dict[str, Any]:
        with self.lock:
            found = [
                c
                for c in reversed(self.calls)
                if values.get("To", c.to) == c.to
                and values.get("From", c.from_) == c.from_
                and values.get("Status", c.status) == c.status
            ]
        return self._page("calls", [self._call_resource(c) for c in found], "Calls.json", values)

    def _update_call(self, call: FakeCall, values: Mapping[str, Any]) -> dict[str, Any]:
        status, url, twiml = values.get("Status"), values.get("Url"), values.get("Twiml")
        if url and twiml:
            raise SpecViolation("Twiml and Url are mutually exclusive", code=21200)
        with self.lock:
            for name in ("StatusCallback", "StatusCallbackMethod", "TimeLimit"):
                if name in values:
                    call.params[name] = values[name]
            if status == "completed" or (
                status == "canceled" and call.status in ("queued", "ringing")
            ):
                if not call.done:
                    call.hang_up_requested = True
                    call.ended_by = call.ended_by or "api"
            elif url or twiml:
                if call.done or call.status != "in-progress":
                    raise SpecViolation(
                        "Call is not in-progress. Cannot redirect this call.", code=21220
                    )
                if url:
                    call.redirect = ("url", str(url), str(values.get("Method", "POST")))
                else:
                    call.redirect = ("twiml", str(twiml), "")
        return self._call_resource(call)

    async def _inbound_call(self, from_: str, to: str, script: CalleeScript) -> FakeCall:
        number = self.number(to)
        if number is None or not number.voice_url:
            raise RuntimeError(f"{to} has no VoiceUrl: configure it first")
        params: dict[str, Any] = {
            "From": from_,
            "To": to,
            "Url": number.voice_url,
            "Method": number.voice_method,
        }
        if number.status_callback:
            params["StatusCallback"] = number.status_callback
            params["StatusCallbackMethod"] = number.status_callback_method
        call = FakeCall(_sid("CA"), params, direction="inbound")
        with self.lock:
            self.calls.append(call)
        await self._run_call(call, script)
        return call

    def _call_params(self, call: FakeCall, status: str | None = None) -> dict[str, str]:
        params = {
            "CallSid": call.sid,
            "AccountSid": self.account_sid,
            "From": call.from_,
            "To": call.to,
            "Caller": call.from_,
            "Called": call.to,
            "CallStatus": status or call.status,
            "Direction": call.direction,
            "ApiVersion": API_VERSION,
        }
        if call.answered_by is not None and call.params.get("AsyncAmd") != "true":
            params["AnsweredBy"] = call.answered_by
        return params

    def _events(self, call: FakeCall) -> tuple[str, ...]:
        events = tuple(call.params.get("StatusCallbackEvent") or ())
        return events or ("completed",)

    def _set_status(self, call: FakeCall, status: str) -> None:
        with self.lock:
            call.status = status
            call.statuses.append(status)

    async def _callback(self, url: str, method: str, params: dict[str, str]) -> None:
        try:
            await self._send(url, params, method)
        except httpx.HTTPError as exc:
            self._record_error(f"callback to {url}: {exc!r}")

    async def _call_event(self, call: FakeCall, event: str) -> None:
        url = call.params.get("StatusCallback")
        if not url or event not in self._events(call):
            return
        params = self._call_params(call, _EVENT_STATUS.get(event, call.status))
        params.update(self._progress_params(call))
        if event == "completed":
            params["CallDuration"] = str(call.duration)
        await self._callback(str(url), str(call.params.get("StatusCallbackMethod", "POST")), params)

    def _progress_params(self, call: FakeCall) -> dict[str, str]:
        """``SequenceNumber`` orders the progress callbacks of one call, from 0."""
        with self.lock:
            sequence = call.progress_sent
            call.progress_sent += 1
        return {
            "CallbackSource": "call-progress-events",
            "SequenceNumber": str(sequence),
            "Timestamp": _rfc2822(),
        }

    async def _finish(self, call: FakeCall, status: str) -> None:
        with self.lock:
            if call.done:
                return
            call.done = True
            call.ended_at = time.time()
            call.status = status
            call.statuses.append(status)
        await self._call_event(call, "completed")

    async def _wait(self, call: FakeCall, seconds: float) -> None:
        """Sleeps ``seconds``, cut short when the call is hung up or redirected."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if call.hang_up_requested or call.redirect is not None or self._over_time(call):
                return
            await asyncio.sleep(min(0.02, max(deadline - time.monotonic(), 0)))

    @staticmethod
    def _over_time(call: FakeCall) -> bool:
        limit = call.params.get("TimeLimit")
        if limit is None or call.answered_at is None:
            return False
        return time.time() - call.answered_at >= int(limit)

    async def _run_call(self, call: FakeCall, script: CalleeScript) -> None:
        try:
            await asyncio.sleep(0.01)  # after the create's answer
            await self._call_event(call, "initiated")
            self._set_status(call, "ringing")
            await self._call_event(call, "ringing")
            await self._wait(call, script.ring_seconds)
            if call.hang_up_requested:  # canceled (API) or declined (callee) while ringing
                await self._finish(call, "canceled" if call.ended_by == "api" else "busy")
                return
            if script.answer in ("no-answer", "busy", "failed"):
                await self._finish(call, script.answer)
                return
            self._answer(call, script)
            await self._call_event(call, "answered")
            if call.params.get("AsyncAmd") == "true" and call.answered_by is not None:
                self._spawn(self._amd_callback(call), f"AMD callback of {call.sid}")
            await self._converse(call, script)
            if call.ended_by is None and self._over_time(call):
                call.ended_by = "time-limit"
            await self._finish(call, "completed")
        except asyncio.CancelledError:
            with self.lock:
                call.done = True
                call.status = "failed" if call.answered_at is None else "completed"
            raise

    def _answer(self, call: FakeCall, script: CalleeScript) -> None:
        detection = call.params.get("MachineDetection")
        with self.lock:
            call.answered_at = time.time()
            if detection in ("Enable", "DetectMessageEnd"):
                if script.answer == "machine":
                    end = detection == "DetectMessageEnd"
                    call.answered_by = "machine_end_beep" if end else "machine_start"
                else:
                    call.answered_by = "human"
        self._set_status(call, "in-progress")

    async def _amd_callback(self, call: FakeCall) -> None:
        url = call.params.get("AsyncAmdStatusCallback")
        if not url:
            return
        params = {
            "CallSid": call.sid,
            "AccountSid": self.account_sid,
            "AnsweredBy": str(call.answered_by),
            "MachineDetectionDuration": "1200",
        }
        method = str(call.params.get("AsyncAmdStatusCallbackMethod", "POST"))
        await self._callback(str(url), method, params)

    # -- the TwiML loop --------------------------------------------------------------------
    async def _converse(self, call: FakeCall, script: CalleeScript) -> None:
        says: collections.deque[str | BargeIn | None] = collections.deque(script.says)
        gathers = 0
        url = call.params.get("Url")
        if url:
            step: _Next | None = _Next(str(url), str(call.params.get("Method", "POST")))
        elif call.params.get("Twiml"):
            step = _Next(None, document=str(call.params["Twiml"]))
        else:
            return  # ApplicationSid: the application's TwiML is not modelled
        first = True
        for _turn in range(200):
            if step is None or call.hang_up_requested:
                return
            document, base = step.document, step.url
            if document is None and base is not None:
                status = "ringing" if first and call.direction == "inbound" else None
                document = await self._fetch(call, base, step.method, step.extra, status)
                if document is None:
                    return
            first = False
            assert document is not None
            with self.lock:
                call.twiml.append(document)
            problem = twiml_problem(document)
            if problem is not None:
                self._call_error(call, f"12100 Document parse failure: {problem}")
                return
            step = None
            for verb in ET.fromstring(document):
                interrupt = self._interrupted(call)
                if interrupt is not False:
                    step = interrupt
                    break
                outcome = await self._verb(call, script, verb, base, says, gathers)
                if outcome == "gathered":
                    gathers += 1
                    continue
                if outcome == "next":
                    continue
                if outcome == "end":
                    break
                if isinstance(outcome, tuple):
                    gathers += outcome[1]
                    step = outcome[0]
                    break
            else:
                interrupt = self._interrupted(call)
                if interrupt is not False:
                    step = interrupt
            if step is None and call.ended_by is None:
                call.ended_by = "service"

    def _interrupted(self, call: FakeCall) -> _Next | Literal[False] | None:
        """A REST redirect (the next step), a hang-up (None), or nothing (False)."""
        with self.lock:
            if call.hang_up_requested or self._over_time(call):
                return None
            redirect, call.redirect = call.redirect, None
        if redirect is None:
            return False
        kind, target, method = redirect
        if kind == "twiml":
            return _Next(None, document=target)
        return _Next(target, method or "POST")

    def _call_error(self, call: FakeCall, problem: str) -> None:
        with self.lock:
            call.errors.append(problem)
        self._record_error(f"call {call.sid}: {problem}")

    async def _fetch(
        self,
        call: FakeCall,
        url: str,
        method: str,
        extra: Mapping[str, str],
        status: str | None = None,
    ) -> str | None:
        """The TwiML at ``url`` (None: the service failed; the call ends, as Twilio's
        "an application error has occurred" does, after trying ``FallbackUrl``)."""
        params = {**self._call_params(call, status), **extra}
        problem: str
        try:
            response = await self._send(url, params, method)
        except httpx.HTTPError as exc:
            problem = f"11200 HTTP retrieval failure: {url}: {exc!r}"
        else:
            if response.is_success:
                return response.text
            problem = f"11200 HTTP retrieval failure: {url} answered {response.status_code}"
        self._call_error(call, problem)
        fallback = call.params.get("FallbackUrl")
        if fallback and url == call.params.get("Url"):
            params.update({"ErrorCode": "11200", "ErrorUrl": url})
            method = str(call.params.get("FallbackMethod", "POST"))
            try:
                response = await self._send(str(fallback), params, method)
            except httpx.HTTPError as exc:
                self._call_error(call, f"11200 HTTP retrieval failure: {fallback}: {exc!r}")
                return None
            if response.is_success:
                return response.text
            self._call_error(
                call, f"11200 HTTP retrieval failure: {fallback} answered {response.status_code}"
            )
        return None

    async def _verb(
        self,
        call: FakeCall,
        script: CalleeScript,
        verb: ET.Element,
        base: str | None,
        says: collections.deque[str | BargeIn | None],
        gathers: int,
    ) -> Literal["next", "end", "gathered"] | tuple[_Next, int]:
        """Plays one verb: ``next`` (go on), ``end`` (the call is over), ``gathered`` (a
        Gather timed out: go on), or the next document to request."""
        tag = verb.tag
        text = "".join(verb.itertext()).strip()
        if tag == "Say":
            with self.lock:
                call.said.append(text)
            return "next"
        if tag == "Play":
            with self.lock:
                call.played.append(text)
            return "next"
        if tag == "Pause":
            return "next"
        if tag in ("Hangup", "Reject"):
            return "end"
        if tag == "Redirect":
            if base is None and not text.startswith("http"):
                self._call_error(call, "a relative <Redirect> in inline TwiML")
                return "end"
            return (_Next(urljoin(base or "", text), verb.get("method", "POST")), 0)
        if tag == "Dial":
            return self._dial(call, verb, base)
        if tag == "Gather":
            return await self._gather(call, script, verb, base, says, gathers)
        if tag == "Connect" and verb.find("ConversationRelay") is not None:
            return await self._relay(call, script, verb, base, says)
        self._call_error(call, f"<{tag}> is not played by the fake")
        return "next"

    def _dial(
        self, call: FakeCall, verb: ET.Element, base: str | None
    ) -> Literal["next"] | tuple[_Next, int]:
        target = (verb.text or "").strip()
        for noun in verb:
            if noun.tag in ("Number", "Client", "Sip") and noun.text:
                target = noun.text.strip()
        with self.lock:
            call.transferred_to = target
        action = verb.get("action")
        if not action:
            return "next"  # the bridged call ended: TwiML goes on after the Dial
        extra = {"DialCallStatus": "completed", "DialCallSid": _sid("CA"), "DialCallDuration": "1"}
        return (_Next(urljoin(base or "", action), verb.get("method", "POST"), extra), 0)

    async def _gather(
        self,
        call: FakeCall,
        script: CalleeScript,
        verb: ET.Element,
        base: str | None,
        says: collections.deque[str | BargeIn | None],
        gathers: int,
    ) -> Literal["next", "end", "gathered"] | tuple[_Next, int]:
        for inner in verb:
            if inner.tag in ("Say", "Play", "Pause"):
                await self._verb(call, script, inner, base, says, gathers)
        inputs = verb.get("input", "dtmf").split()
        action = urljoin(base or "", verb.get("action") or "") or base
        method = verb.get("method", "POST")
        on_empty = verb.get("actionOnEmptyResult", "false") == "true"
        if script.answer == "machine":
            speech: str | None = None  # a machine says nothing back
        else:
            if not says or (script.hang_up_after is not None and gathers >= script.hang_up_after):
                with self.lock:
                    call.hang_up_requested = True
                    call.ended_by = call.ended_by or "callee"
                return "end"
            said = says.popleft()
            speech = said.text if isinstance(said, BargeIn) else said
            await self._wait(call, script.seconds_per_turn)
            if call.hang_up_requested or call.redirect is not None:
                return "next"  # the interruption is taken before the next verb
            with self.lock:
                call.heard.append(speech)
        if speech is not None and "speech" in inputs:
            extra = {"SpeechResult": speech, "Confidence": f"{script.confidence:.2f}"}
        elif speech is not None and "dtmf" in inputs and re.fullmatch(r"[0-9#*]+", speech):
            extra = {"Digits": speech}
        else:  # no input: Twilio goes on after the Gather (or asks action, if told to)
            if on_empty and action:
                return (_Next(action, method), 1)
            return "gathered" if script.answer != "machine" else "next"
        if action is None:
            self._call_error(call, "a <Gather> without action in inline TwiML")
            return "end"
        return (_Next(action, method, extra), 1)

    # -- ConversationRelay ------------------------------------------------------------------
    async def _relay(
        self,
        call: FakeCall,
        script: CalleeScript,
        verb: ET.Element,
        base: str | None,
        says: collections.deque[str | BargeIn | None],
    ) -> Literal["next", "end"] | tuple[_Next, int]:
        """``<Connect><ConversationRelay url=...>``: opens the WebSocket signed as Twilio
        signs it (the ``wss://`` URL, no parameters), says the ``welcomeGreeting``, sends
        ``setup`` (unless ``relay_setup`` is off), then plays the callee
        (``testing._relay``). The agent's ``end`` ends the session and the
        ``<Connect>``'s action is asked what follows (``SessionStatus``,
        ``HandoffData``); the service closing the socket alike (``SessionStatus=failed``)."""
        from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]
        from websockets.exceptions import InvalidStatus, WebSocketException

        from .._relay import relay_session

        relay = verb.find("ConversationRelay")
        assert relay is not None
        url = relay.get("url", "")
        signature = RequestValidator(self.auth_token).compute_signature(url, {})
        started = time.monotonic()
        greeting = relay.get("welcomeGreeting")
        if greeting:
            with self.lock:
                call.said.append(greeting)
        status, handoff = "failed", ""
        try:
            status, handoff = await relay_session(
                url,
                headers={"X-Twilio-Signature": signature},
                setup=self._setup(call) if self.relay_setup else None,
                call=call,
                script=script,
                says=says,
                lock=self.lock,
                wait=lambda seconds: self._wait(call, seconds),
                hang_up_now=lambda: (
                    call.hang_up_requested or self._over_time(call) or call.redirect is not None
                ),
                greeted=bool(greeting),
                open_timeout=CALLBACK_TIMEOUT,
            )
        except InvalidStatus as exc:
            self._call_error(
                call, f"ConversationRelay: {url} refused the WebSocket ({exc.response.status_code})"
            )
            return "end"
        except (OSError, WebSocketException, TimeoutError) as exc:
            self._call_error(call, f"ConversationRelay: {url}: {exc!r}")
        if status == "hung-up":
            return "end"
        action = verb.get("action")
        if not action:
            return "next"
        extra = {
            "SessionId": _sid("VX"),
            "SessionStatus": status,
            "SessionDuration": str(int(time.monotonic() - started)),
        }
        if handoff:
            extra["HandoffData"] = handoff
        return (_Next(urljoin(base or "", action), verb.get("method", "POST"), extra), 0)

    def _setup(self, call: FakeCall) -> dict[str, Any]:
        return {
            "type": "setup",
            "sessionId": _sid("VX"),
            "accountSid": self.account_sid,
            "parentCallSid": "",
            "callSid": call.sid,
            "from": call.from_,
            "to": call.to,
            "forwardedFrom": "",
            "callType": "PSTN",
            "callerName": "",
            "direction": "inbound" if call.direction == "inbound" else "outbound-api",
            "callStatus": "IN-PROGRESS",
            "customParameters": {},
        }


def _contains_pattern(pattern: Any) -> re.Pattern[str] | None:
    """``Contains`` as Twilio reads it: letters as on a phone keypad, ``*`` one
    character, ``%`` any run, ``+`` at the start anchors it, ``$`` at the end."""
    if pattern is None:
        return None
    keypad = {
        **dict.fromkeys("abc", "2"),
        **dict.fromkeys("def", "3"),
        **dict.fromkeys("ghi", "4"),
        **dict.fromkeys("jkl", "5"),
        **dict.fromkeys("mno", "6"),
        **dict.fromkeys("pqrs", "7"),
        **dict.fromkeys("tuv", "8"),
        **dict.fromkeys("wxyz", "9"),
    }
    text = str(pattern)
    anchored_start = text.startswith("+")
    anchored_end = text.endswith("$")
    text = text.removeprefix("+").removesuffix("$")
    parts: list[str] = []
    for ch in text:
        if ch == "*":
            parts.append(r"\d")
        elif ch == "%":
            parts.append(r"\d*")
        elif ch.isalpha():
            parts.append(keypad.get(ch.lower(), ""))
        else:
            parts.append(re.escape(ch))
    regex = "".join(parts)
    if anchored_start:
        regex = r"^\+" + regex
    if anchored_end:
        regex += "$"
    return re.compile(regex)
