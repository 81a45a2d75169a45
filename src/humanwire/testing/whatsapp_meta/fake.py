"""``FakeMetaWhatsApp``: the test's handle on a fake Cloud API, its state (``state.py``),
its Graph API (``responses.py``) and the webhooks it sends as Meta does: signed
``X-Hub-Signature-256`` (HMAC-SHA256 of the raw body with the app secret), shaped as in
2026 (each contact with its business-scoped ``user_id`` beside ``wa_id``, statuses
carrying their contact), each checked against the description before it goes."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx
from starlette.applications import Starlette

from .._fake_server import FakeBackground, poll_until
from .responses import MetaResponses
from .spec import load_spec
from .state import MetaState, WhatsAppPerson, WhatsAppSent

__all__ = ["FakeMetaWhatsApp"]

T = TypeVar("T")
_TIMEOUT = 10.0


class FakeMetaWhatsApp:
    """One business phone number and the people who write to it.

    Point the code under test at it: the Graph API base (the server's ``api_base``),
    ``phone_number_id``, ``access_token``, ``app_secret``, ``verify_token``; set
    ``webhook_url`` to the app's webhook. ``statuses=False``: no ``sent`` / ``delivered``
    after each send (a test sends its own with ``status``)."""

    def __init__(self, *, statuses: bool = True) -> None:
        self.spec = load_spec()
        self.state = MetaState()
        self.statuses = statuses
        self.webhook_url: str | None = None
        self.background = FakeBackground(
            "fake Meta WhatsApp", "MetaWhatsAppFakeServer", self.state.lock, self._error
        )
        self.responses = MetaResponses(self.state, self.spec, self._sent)

    def _error(self, message: str) -> None:
        with self.state.lock:
            self.state.errors.append(message)

    # -- what the app is given ---------------------------------------------------------
    @property
    def phone_number_id(self) -> str:
        return self.state.phone_number_id

    @property
    def sender(self) -> str:
        """The business number (E.164)."""
        return "+" + self.state.display_phone_number

    @property
    def access_token(self) -> str:
        return self.state.access_token

    @property
    def app_secret(self) -> str:
        return self.state.app_secret

    @property
    def verify_token(self) -> str:
        return self.state.verify_token

    # -- the world and records ---------------------------------------------------------
    def add_person(self, name: str, wa_id: str | None = None) -> WhatsAppPerson:
        return self.state.add_person(name, wa_id)

    @property
    def violations(self) -> list[str]:
        with self.state.lock:
            return list(self.state.violations)

    @property
    def errors(self) -> list[str]:
        with self.state.lock:
            return list(self.state.errors)

    def sent_to(self, person: WhatsAppPerson) -> list[WhatsAppSent]:
        with self.state.lock:
            return [m for m in self.state.sent if m.to == person.wa_id]

    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        return poll_until(predicate, self.state.lock, timeout, "fake Meta WhatsApp")

    def wait_idle(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.background.idle:
            if time.monotonic() > deadline:
                raise TimeoutError("the fake Meta WhatsApp's statuses did not finish")
            time.sleep(0.01)

    # -- what people do ----------------------------------------------------------------
    def say(
        self, person: WhatsAppPerson, text: str, *, reply_to: WhatsAppSent | None = None
    ) -> httpx.Response:
        """``person`` writes ``text`` to the business number (quoting ``reply_to``)."""
        message: dict[str, Any] = {"type": "text", "text": {"body": text}}
        if reply_to is not None:
            message["context"] = {"from": self.state.display_phone_number, "id": reply_to.id}
        return self.post(self.message_payload(person, message))

    def press(self, person: WhatsAppPerson, sent: WhatsAppSent, button: str) -> httpx.Response:
        """``person`` presses the reply button whose id or title is ``button``."""
        chosen = next((b for b in sent.buttons if button in b), None)
        if chosen is None:
            raise ValueError(f"no button {button!r} on {sent.id} ({sent.buttons})")
        message = {
            "type": "interactive",
            "context": {"from": self.state.display_phone_number, "id": sent.id},
            "interactive": {
                "type": "button_reply",
                "button_reply": {"id": chosen[0], "title": chosen[1]},
            },
        }
        return self.post(self.message_payload(person, message))

    def status(
        self, sent: WhatsAppSent, status: str, *, error_code: int | None = None
    ) -> httpx.Response:
        """A delivery status of ``sent`` (``sent``, ``delivered``, ``read``, ``failed``)."""
        return self.post(self.status_payload(sent, status, error_code))

    def message_payload(
        self, person: WhatsAppPerson, message: dict[str, Any], *, message_id: str | None = None
    ) -> dict[str, Any]:
        """A webhook of one message from ``person`` (Meta's id unless given), which opens
        their 24-hour window."""
        with self.state.lock:
            person.last_wrote = time.time()
            message = {
                "from": person.wa_id,
                "from_user_id": person.user_id,
                "id": message_id or self.state.message_id(),
                "timestamp": str(int(time.time())),
                **message,
            }
        return self._envelope(
            {
                "messaging_product": "whatsapp",
                "metadata": self._metadata(),
                "contacts": [_contact(person)],
                "messages": [message],
            }
        )

    def status_payload(
        self, sent: WhatsAppSent, status: str, error_code: int | None = None
    ) -> dict[str, Any]:
        person = self.state.people[sent.to]
        entry: dict[str, Any] = {
            "id": sent.id,
            "status": status,
            "timestamp": str(int(time.time())),
            "recipient_id": person.wa_id,
            "recipient_user_id": person.user_id,
        }
        if error_code is not None:
            entry["errors"] = [{"code": error_code, "title": _ERRORS.get(error_code, "Error")}]
        with self.state.lock:
            sent.statuses.append(status)
        return self._envelope(
            {
                "messaging_product": "whatsapp",
                "metadata": self._metadata(),
                "contacts": [_contact(person)],
                "statuses": [entry],
            }
        )

    def _metadata(self) -> dict[str, str]:
        return {
            "display_phone_number": self.state.display_phone_number,
            "phone_number_id": self.state.phone_number_id,
        }

    def _envelope(self, value: dict[str, Any]) -> dict[str, Any]:
        payload = {
            "object": "whatsapp_business_account",
            "entry": [
                {"id": self.state.waba_id, "changes": [{"value": value, "field": "messages"}]}
            ],
        }
        problem = self.spec.check_webhook(payload)
        if problem is not None:
            self._error(f"the fake's own webhook breaks the description: {problem}")
        return payload

    def sign(self, body: bytes) -> str:
        return "sha256=" + hmac.new(self.app_secret.encode(), body, hashlib.sha256).hexdigest()

    def post(self, payload: dict[str, Any]) -> httpx.Response:
        """``payload`` to the webhook, signed (blocking: from the test's thread)."""
        return self.post_signed(json.dumps(payload).encode())

    def post_signed(self, body: bytes, *, signature: str | None = None) -> httpx.Response:
        """Any body, signed (or with the given ``signature``: a forgery)."""
        url = self._url()
        headers = {
            "Content-Type": "application/json",
            "X-Hub-Signature-256": self.sign(body) if signature is None else signature,
        }
        return httpx.post(url, content=body, headers=headers, timeout=_TIMEOUT)

    def handshake(
        self, verify_token: str | None = None, challenge: str = "1158201444"
    ) -> httpx.Response:
        """What Meta sends when the webhook is saved (``GET`` with ``hub.*``)."""
        params = {
            "hub.mode": "subscribe",
            "hub.verify_token": self.verify_token if verify_token is None else verify_token,
            "hub.challenge": challenge,
        }
        return httpx.get(self._url(), params=params, timeout=_TIMEOUT)

    def _url(self) -> str:
        if self.webhook_url is None:
            raise RuntimeError("set fake.webhook_url to the app's webhook first")
        return self.webhook_url

    # -- in the background -------------------------------------------------------------
    def _sent(self, sent: WhatsAppSent, person: WhatsAppPerson) -> None:
        if not self.statuses or self.webhook_url is None:
            return
        window = sent.type == "template" or self.state.in_window(person)
        self.background.spawn(self._statuses(sent, window), f"statuses of {sent.id}")

    async def _statuses(self, sent: WhatsAppSent, window: bool) -> None:
        steps = [("sent", None), ("delivered", None)] if window else [("failed", 131047)]
        for status, code in steps:
            body = json.dumps(self.status_payload(sent, status, code)).encode()
            headers = {"Content-Type": "application/json", "X-Hub-Signature-256": self.sign(body)}
            response = await self.background.http.post(self._url(), content=body, headers=headers)
            if response.status_code != 200:
                self._error(f"the webhook answered {status} of {sent.id} {response.status_code}")

    def app(self) -> Starlette:
        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with self.background.serving():
                yield

        return self.responses.app(lifespan)


def _contact(person: WhatsAppPerson) -> dict[str, Any]:
    return {"profile": {"name": person.name}, "wa_id": person.wa_id, "user_id": person.user_id}


_ERRORS = {131047: "Re-engagement message", 131026: "Message undeliverable"}
