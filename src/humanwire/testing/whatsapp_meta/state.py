"""The fake Cloud API's world and records, apart from its HTTP handling (as moto keeps a
service's backend apart from its responses): the business phone number, the people
(each with a ``wa_id`` and a 2026 business-scoped ``user_id``), the messages sent and
the 24-hour windows. Every change goes through :class:`MetaState` under its lock."""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MetaError", "MetaState", "WhatsAppPerson", "WhatsAppSent"]

WINDOW_SECONDS = 24 * 3600.0


class MetaError(Exception):
    """What the Graph API answers a request it refuses."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": "OAuthException",
                "code": self.code,
                "fbtrace_id": "AFakeTraceId",
            }
        }


@dataclass
class WhatsAppPerson:
    wa_id: str
    """Digits, no ``+`` (the person's number)."""
    user_id: str
    """The business-scoped user id (``US.<digits>``)."""
    name: str
    last_wrote: float | None = None
    """When they last wrote to the business number (their 24-hour window)."""

    @property
    def address(self) -> str:
        """Their number as humanwire takes it (E.164)."""
        return "+" + self.wa_id


@dataclass
class WhatsAppSent:
    """A message the business sent: Meta's ``id`` and the request body as sent."""

    id: str
    to: str
    body: dict[str, Any]
    at: float
    statuses: list[str] = field(default_factory=list)

    @property
    def type(self) -> str:
        return str(self.body.get("type"))

    @property
    def text(self) -> str:
        """What the person reads: a text's body, an interactive's, a template's variables."""
        if self.type == "text":
            return str(self.body["text"]["body"])
        if self.type == "interactive":
            return str(self.body["interactive"].get("body", {}).get("text", ""))
        if self.type == "template":
            parts = [
                str(p.get("text", ""))
                for c in self.body["template"].get("components", [])
                for p in c.get("parameters", [])
            ]
            return " ".join(parts)
        return ""

    @property
    def buttons(self) -> list[tuple[str, str]]:
        """The reply buttons' ``(id, title)``."""
        if self.type != "interactive":
            return []
        return [
            (b["reply"]["id"], b["reply"]["title"])
            for b in self.body["interactive"].get("action", {}).get("buttons", [])
        ]

    @property
    def reply_to(self) -> str | None:
        return (self.body.get("context") or {}).get("message_id")


class MetaState:
    """One WhatsApp Business Account with one phone number, and the test's records."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.waba_id = "419561257915477"
        self.phone_number_id = "106540352242922"
        self.display_phone_number = "14155550142"
        self.access_token = "EAAG" + secrets.token_urlsafe(24)
        self.app_secret = secrets.token_hex(16)
        self.verify_token = secrets.token_urlsafe(12)
        self.people: dict[str, WhatsAppPerson] = {}
        self.sent: list[WhatsAppSent] = []
        self.requests: list[tuple[str, str, Any]] = []
        self.violations: list[str] = []
        self.errors: list[str] = []
        self._ids = itertools.count(1)

    def add_person(self, name: str, wa_id: str | None = None) -> WhatsAppPerson:
        with self.lock:
            number = wa_id or f"1650555{len(self.people) + 1000:04d}"
            person = WhatsAppPerson(number, f"US.{secrets.randbelow(10**19):019d}", name)
            self.people[number] = person
            return person

    def message_id(self) -> str:
        return f"wamid.HBgL{next(self._ids):08d}{secrets.token_hex(6).upper()}"

    def in_window(self, person: WhatsAppPerson) -> bool:
        return person.last_wrote is not None and person.last_wrote + WINDOW_SECONDS > time.time()

    def send(self, body: dict[str, Any]) -> tuple[WhatsAppSent, WhatsAppPerson]:
        """A send the description took: recorded, or refused as Meta refuses it."""
        with self.lock:
            person = self.people.get(str(body["to"]).removeprefix("+"))
            if person is None:
                raise MetaError(400, 131026, "(#131026) Message undeliverable")
            context = (body.get("context") or {}).get("message_id")
            if context is not None and not any(m.id == context for m in self.sent):
                raise MetaError(400, 100, "(#100) Invalid parameter: context.message_id")
            sent = WhatsAppSent(self.message_id(), person.wa_id, body, time.time())
            self.sent.append(sent)
            return sent, person

    def find(self, message_id: str) -> WhatsAppSent | None:
        with self.lock:
            return next((m for m in self.sent if m.id == message_id), None)
