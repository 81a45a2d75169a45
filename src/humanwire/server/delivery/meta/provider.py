"""``MetaWhatsAppProvider``: the whatsapp channel through Meta's Cloud API (Graph API,
plain httpx; docs/going-live/whatsapp-meta.md).

- **Sends** go out from the business phone number (``phone_number_id``) with
  ``POST /{version}/{phone number id}/messages``. Inside the 24-hour window (the person
  wrote to this number in the last 24 hours: every webhook message renews it) the text
  goes as it is; outside it only an approved template may (Meta fails anything else with
  131047), so a text that has a template (``notification``, ``request``, ``form``) goes as
  the template named in ``[whatsapp] templates``, its one body variable the text. The
  interaction's provider ref is Meta's message id (``wamid.…``).
- **Approvals**: inside the window an approval's ask goes as an interactive message with
  two reply buttons (Approve / Reject: ≤ 3 buttons, titles ≤ 20 characters) whose ids
  carry ``hw:<interaction id>:<choice>`` and the ask's short code when it has one. A
  press is read as the approver's reply (``YES <code>`` / ``NO <code>``, as the engine
  reads a typed one), recorded ``via`` ``whatsapp_button``, and, since Meta's
  messages cannot be edited, the outcome goes back as a reply to the ask
  (``context.message_id``).
- **What comes back** (``/providers/meta/whatsapp``, ``routes``): a text (threaded to
  our message it quotes, ``context.id``), a press, a template's quick reply; delivery
  statuses (``sent`` → ``delivered`` → ``read``, or ``failed``). Each message is taken
  once (its id is the text's ``ref``). People are keyed by ``wa_id``; the business-scoped
  ``user_id`` (2026) is remembered beside it, so a message that carries only the
  ``user_id`` still finds the person's number.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute

from humanwire.types import DeliveryStatus

from ...background.work import BackgroundWork
from ...telemetry import redact_numbers
from ..base import Credentials, Outbound, ProviderFailure, RecipientUnreachable, Sent
from .rest import GraphAPIError, GraphREST

if TYPE_CHECKING:
    from ...config import MetaWhatsAppConfig
    from ..port import InboundPort

__all__ = ["BODY_LIMIT", "ROUTE_PREFIX", "MetaWhatsAppProvider", "button_id"]

logger = logging.getLogger("humanwire.meta")

ROUTE_PREFIX = "/providers/meta"
TEXT_LIMIT = 4096
"""Characters of a text message's body."""
BODY_LIMIT = 1024
"""Characters of an interactive message's body."""
WINDOW_SECONDS = 24 * 3600.0
WINDOW_SCOPE = "meta-whatsapp-window"
USER_SCOPE = "meta-whatsapp-user"
"""A business-scoped user id → the person's ``wa_id``."""
REF_WAIT = 5.0
"""How long a reply quoting our message waits for its send to be recorded."""
CREDENTIALS_TIMEOUT = 5.0
CHOICES = {"approve": ("Approve", "YES"), "reject": ("Reject", "NO")}
"""A button's choice → its title (≤ 20 characters) and the reply it stands for."""
_ASK_CODE = re.compile(r"Reply YES (\d{4}) or NO \1")
"""The short code an approval's ask names (``approvals.texts``' answer hint)."""

UNREACHABLE_CODES = frozenset(
    {
        131026,  # message undeliverable (not a WhatsApp user, old app, …)
        131030,  # recipient not in the allowed list (a test number)
        131045,  # incorrect certificate / unregistered recipient
        100,  # invalid parameter: a `to` Meta cannot parse
    }
)

_STATUS: dict[str, DeliveryStatus] = {
    "sent": "sent",
    "delivered": "delivered",
    "read": "read",
    "failed": "failed",
}


def button_id(interaction_id: str, choice: str, code: str | None) -> str:
    """A reply button's id: ``hw:<id>:<choice>`` and the ask's code (≤ 256 characters)."""
    return f"hw:{interaction_id}:{choice}" + (f":{code}" if code else "")


def wa_id(address: str) -> str:
    """An E.164 address as Meta names the person: digits, no ``+``."""
    return address.removeprefix("+")


class MetaWhatsAppProvider:
    name = "meta"
    channels = ("whatsapp",)

    def __init__(
        self,
        config: MetaWhatsAppConfig,
        inbound: InboundPort,
        *,
        public_url: str,
        transport: Any = None,
    ) -> None:
        self.config = config
        self.inbound = inbound
        self.public_url = public_url.rstrip("/")
        self.rest = GraphREST(
            config.access_token,
            config.phone_number_id,
            config.api_base,
            config.api_version,
            transport=transport,
            metrics=inbound.metrics,
        )
        self.credentials = Credentials()
        self.background = BackgroundWork("the Meta WhatsApp provider")

    @property
    def senders(self) -> Mapping[str, str]:
        return {"whatsapp": self.config.sender}

    @property
    def webhook_url(self) -> str:
        return f"{self.public_url}{ROUTE_PREFIX}/whatsapp"

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        return sender == self.config.sender

    async def hang_up(self, ref: str) -> None:
        """Meta's WhatsApp carries no calls here."""

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        self.background.spawn(work)

    async def start(self) -> None:
        """One authenticated read of the phone number: 401 / 190 is a refused token."""
        try:
            await asyncio.wait_for(self.rest.phone_number(), CREDENTIALS_TIMEOUT)
        except GraphAPIError as exc:
            if exc.status in (401, 403) or exc.code == 190:
                self.credentials = Credentials(
                    "refused", f"whatsapp.access_token refused by Meta ({exc})"
                )
                logger.error("Meta refused whatsapp.access_token: %s", exc)
            else:
                self.credentials = Credentials(
                    "unverified", f"Meta could not be reached at start ({exc})"
                )
                logger.warning("Meta credentials not verified at start: %s", exc)
        except asyncio.TimeoutError:
            self.credentials = Credentials(
                "unverified", f"Meta did not answer within {CREDENTIALS_TIMEOUT:g} s at start"
            )
        else:
            self.credentials = Credentials("accepted", "whatsapp.access_token accepted")

    async def aclose(self) -> None:
        await self.background.cancel()
        await self.rest.aclose()

    def routes(self) -> list[BaseRoute]:
        from .routes import meta_routes

        return list(meta_routes(self))

    # -- sends ---------------------------------------------------------------------
    async def in_window(self, person: str) -> bool:
        seen = await self.inbound.state.get_provider_state(WINDOW_SCOPE, person)
        return seen is not None and float(seen.get("at", 0)) + WINDOW_SECONDS > time.time()

    async def deliver(self, item: Outbound) -> Sent:
        to = wa_id(item.to_addr)
        body = await self._body(item, to)
        try:
            answer = await self.rest.send_message(body, account=item.account_id)
        except GraphAPIError as exc:
            raise _refusal(exc) from None
        messages = answer.get("messages")
        first = messages[0] if isinstance(messages, list) and messages else None
        ref = first.get("id") if isinstance(first, dict) else None
        if not isinstance(ref, str) or not ref:
            raise ProviderFailure("Meta answered without a message id")
        return Sent(ref=ref, status="queued")

    async def _body(self, item: Outbound, to: str) -> dict[str, Any]:
        base: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": to,
        }
        open_window = await self.in_window(to)
        if item.template is not None and not open_window:
            template = item.template
            name = template.content_sid or self.config.templates.get(template.name or "")
            if name:
                language = self.config.template_language
                parameters = [
                    {"type": "text", "text": value} for value in template.variables.values()
                ]
                return {
                    **base,
                    "type": "template",
                    "template": {
                        "name": name,
                        "language": {"policy": "deterministic", "code": language},
                        "components": [{"type": "body", "parameters": parameters}],
                    },
                }
            logger.warning(
                "no whatsapp.templates.%s configured: sending plain text outside WhatsApp's "
                "24-hour window (Meta fails it with 131047 for a person who has not written)",
                template.name,
            )
        if open_window and item.kind == "message" and item.interaction_id:
            record = await self.inbound.interaction(item.interaction_id)
            if record is not None and record.kind == "approval":
                return {**base, "type": "interactive", "interactive": _buttons(item)}
        text = item.text if len(item.text) <= TEXT_LIMIT else item.text[: TEXT_LIMIT - 1] + "…"
        return {
            **base,
            "type": "text",
            "text": {"body": text, "preview_url": item.form_url is not None},
        }

    async def say(self, to: str, text: str, reply_to: str | None = None) -> None:
        """A text the person gets from the service itself (an outcome), as a reply to
        ``reply_to`` when given; logged, not raised, when Meta refuses it."""
        body: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": to,
            "type": "text",
            "text": {"body": text[:TEXT_LIMIT]},
        }
        if reply_to:
            body["context"] = {"message_id": reply_to}
        try:
            await self.rest.send_message(body)
        except GraphAPIError as exc:
            logger.warning("Meta refused a reply: %s", redact_numbers(str(exc)))

    # -- what comes back -------------------------------------------------------------
    async def on_payload(self, payload: Mapping[str, Any]) -> list[str]:
        """A webhook of the shape ``routes.payload_shape`` checked; returns what became of
        each message and status, for the log and the tests."""
        outcomes: list[str] = []
        for entry in payload["entry"]:
            for change in entry["changes"]:
                value = change.get("value")
                if change.get("field") != "messages" or not isinstance(value, Mapping):
                    continue
                metadata = value.get("metadata") or {}
                if metadata.get("phone_number_id") != self.config.phone_number_id:
                    outcomes.append("another number's")
                    continue
                await self._remember(value.get("contacts") or [])
                for message in value.get("messages") or []:
                    outcomes.append(await self.on_message(message, value.get("contacts") or []))
                for status in value.get("statuses") or []:
                    outcomes.append(await self.on_status(status))
        return outcomes

    async def _remember(self, contacts: list[Mapping[str, Any]]) -> None:
        now = time.time()
        for contact in contacts:
            wa, user = contact.get("wa_id"), contact.get("user_id")
            if isinstance(wa, str) and wa and isinstance(user, str) and user:
                await self.inbound.state.put_provider_state(USER_SCOPE, user, {"wa_id": wa}, now)

    async def _sender(
        self, message: Mapping[str, Any], contacts: list[Mapping[str, Any]]
    ) -> str | None:
        """The person's ``wa_id``: the message's ``from``, its contact's, or the one the
        business-scoped ``from_user_id`` was seen with before."""
        sender = message.get("from")
        if isinstance(sender, str) and sender:
            return sender
        user = message.get("from_user_id")
        for contact in contacts:
            if contact.get("user_id") == user and isinstance(contact.get("wa_id"), str):
                return str(contact["wa_id"])
        if isinstance(user, str) and user:
            known = await self.inbound.state.get_provider_state(USER_SCOPE, user)
            if known is not None:
                return str(known.get("wa_id") or "") or None
        return None

    async def on_message(
        self, message: Mapping[str, Any], contacts: list[Mapping[str, Any]]
    ) -> str:
        from ..port import InboundText

        sender = await self._sender(message, contacts)
        if sender is None:
            logger.info("a WhatsApp message from a user id with no known number: not taken")
            return "no number"
        now = time.time()
        await self.inbound.state.put_provider_state(WINDOW_SCOPE, sender, {"at": now}, now)
        kind = message.get("type")
        quoted = (message.get("context") or {}).get("id")
        if kind == "interactive":
            reply = (message.get("interactive") or {}).get("button_reply") or {}
            return await self.on_press(message, sender, str(reply.get("id") or ""), quoted)
        if kind == "text":
            body = str((message.get("text") or {}).get("body") or "")
        elif kind == "button":  # a template's quick reply
            body = str((message.get("button") or {}).get("text") or "")
        else:
            return "ignored"  # media, reactions, locations: no answer to read
        record = None
        if isinstance(quoted, str) and quoted:
            record = await self._posted(quoted)
        stored = await self.inbound.receive_text(
            InboundText(
                channel="whatsapp",
                from_addr="+" + sender,
                to_addr=self.config.sender,
                body=body,
                thread=record.id if record is not None and record.kind == "message" else None,
                ref=f"meta:{message['id']}",
            )
        )
        if stored is None:
            return "duplicate or nobody's"
        return "matched" if stored.interaction_id else "unsolicited"

    async def _posted(self, ref: str) -> Any:
        """The interaction whose message ``ref`` is (a reply can overtake the send's
        record: looked up again for a few seconds)."""
        deadline = time.monotonic() + REF_WAIT
        while True:
            record = await self.inbound.interaction_by_ref(ref)
            if record is not None or time.monotonic() >= deadline:
                return record
            await asyncio.sleep(0.05)

    async def on_press(
        self, message: Mapping[str, Any], sender: str, data: str, quoted: Any
    ) -> str:
        """A reply button pressed: ``hw:<id>:<choice>[:<code>]`` is the approver's YES or
        NO (with the code), read as their reply; the outcome goes back as a reply to the
        ask."""
        from ..port import InboundText

        prefix, interaction_id, choice, *rest = [*data.split(":"), "", ""][:4]
        if prefix != "hw" or choice not in CHOICES or not interaction_id:
            return "ignored"
        code = rest[0] if rest and re.fullmatch(r"\d{4}", rest[0]) else None
        title, word = CHOICES[choice]
        stored = await self.inbound.receive_text(
            InboundText(
                channel="whatsapp",
                from_addr="+" + sender,
                to_addr=self.config.sender,
                body=f"{word} {code}" if code else word,
                ref=f"meta:{message['id']}",
                via="whatsapp_button",
            )
        )
        if stored is None:
            return "duplicate or nobody's"
        record = await self.inbound.interaction(interaction_id)
        if record is not None and record.status == "ended":
            decision = ((record.result or {}).get("payload") or {}).get("decision")
            shown = f"🔒 This approval is closed: {decision}." if decision else "🔒 Closed."
        else:
            shown = f"✅ Your answer is in: {title}."
        self.spawn(self.say(sender, shown, quoted if isinstance(quoted, str) else None))
        return "answered"

    async def on_status(self, status: Mapping[str, Any]) -> str:
        mapped = _STATUS.get(str(status.get("status") or ""))
        if mapped is None:
            return "ignored"
        if mapped == "failed":
            errors = status.get("errors") or []
            codes = [e.get("code") for e in errors if isinstance(e, Mapping)]
            logger.warning("Meta failed a WhatsApp message (%s)", codes or "no code")
        await self.inbound.delivery_status(str(status["id"]), mapped)
        return mapped


def _buttons(item: Outbound) -> dict[str, Any]:
    assert item.interaction_id is not None
    match = _ASK_CODE.search(item.text)
    code = match.group(1) if match else None
    text = item.text if len(item.text) <= BODY_LIMIT else item.text[: BODY_LIMIT - 1] + "…"
    return {
        "type": "button",
        "body": {"text": text},
        "action": {
            "buttons": [
                {
                    "type": "reply",
                    "reply": {"id": button_id(item.interaction_id, choice, code), "title": title},
                }
                for choice, (title, _) in CHOICES.items()
            ]
        },
    }


def _refusal(exc: GraphAPIError) -> Exception:
    if exc.code in UNREACHABLE_CODES:
        return RecipientUnreachable(f"invalid to number (Meta {exc.code}: {exc.message})")
    if exc.status == 0:
        return ProviderFailure(f"Meta could not take the message: {exc.message}")
    logger.warning("Meta refused a message: %s", redact_numbers(str(exc)))
    return ProviderFailure(
        f"Meta refused the message ({exc.code or exc.status}: {exc.message})",
        retry_after=exc.retry_after if exc.retry_after is not None else 5.0,
    )
