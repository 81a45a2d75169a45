"""The fake Twilio's records and vocabulary: numbers, messages, calls, the requests and
callbacks it saw, and the rules written once (ids, dates, segments, ``Contains``)."""

from __future__ import annotations

import email.utils
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import phonenumbers

from .spec import SpecViolation

API_VERSION = "2010-04-01"
WHATSAPP = "whatsapp:"
CALLBACK_TIMEOUT = 10.0
CALL_EVENTS = ("initiated", "ringing", "answered", "completed")
EVENT_STATUS = {"initiated": "initiated", "ringing": "ringing", "answered": "in-progress"}
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
MISSING_CODES = {
    ("POST /Messages.json", "To"): 21604,
    ("POST /Calls.json", "To"): 21201,
    ("POST /Calls.json", "From"): 21213,
}
URL_PARAMETERS = {
    "StatusCallback": 21609,
    "AsyncAmdStatusCallback": 21609,
    "Url": 21205,
    "FallbackUrl": 21205,
}


def new_sid(prefix: str) -> str:
    return prefix + secrets.token_hex(16)


def rfc2822(unix: float | None = None) -> str:
    """``Tue, 31 Aug 2010 20:36:28 +0000``, as Twilio writes dates."""
    return email.utils.formatdate(unix if unix is not None else time.time(), usegmt=True).replace(
        "GMT", "+0000"
    )


def is_e164(phone: str) -> bool:
    if not re.fullmatch(r"\+[1-9]\d{6,14}", phone):
        return False
    try:
        return bool(phonenumbers.is_valid_number(phonenumbers.parse(phone, None)))
    except phonenumbers.NumberParseException:
        return False


def segments(body: str) -> int:
    """SMS segments: 160 / 153 GSM-7 characters, 70 / 67 for anything else (UCS-2)."""
    if not body:
        return 1
    gsm = all(ch == "\n" or ch == "\r" or " " <= ch <= "~" for ch in body)
    single, multi = (160, 153) if gsm else (70, 67)
    return 1 if len(body) <= single else -(-len(body) // multi)


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
            "date_created": rfc2822(self.created),
            "date_updated": rfc2822(self.updated),
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
NUMBER_FIELDS = {
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
class Failure:
    status: int
    code: int
    retry_after: float | None
    times: int
    match: str | None


class InjectedRefusal(SpecViolation):
    """A refusal the test asked for (``refuse``): answered, not a violation."""


class NextStep(NamedTuple):
    """Where a call's TwiML goes next: a URL to request, or an inline document."""

    url: str | None
    method: str = "POST"
    extra: dict[str, str] = {}  # noqa: RUF012 (NamedTuple defaults are not shared state)
    document: str | None = None


def contains_pattern(pattern: Any) -> re.Pattern[str] | None:
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
