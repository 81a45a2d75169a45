"""``TeamsProvider``: the teams channel through a Microsoft Teams bot an operator
registers (docs/going-live/teams.md), on the Bot Framework Connector's REST API with
httpx: no SDK (botbuilder is archived; the Teams SDK's models take misspelt fields
silently, and the Connector is five plain calls).

- **Install**: a person installs the app (personal scope); Teams sends an
  ``installationUpdate`` (or a ``conversationUpdate`` adding the bot) carrying their
  conversation reference: the conversation id, the regional ``serviceUrl`` and the
  tenant. The reference is kept by the person's Teams user id (``29:…``): it is what a
  proactive send needs, and the address ``to`` names. Removing the app forgets it.
- **Sends** (proactive): ``POST {serviceUrl}/v3/conversations/{id}/activities`` with a
  bot token from Microsoft's token endpoint (client credentials, scope
  ``https://api.botframework.com/.default``: the client secret, or a client assertion
  signed with the certificate's key, ``certificate``), cached until shortly before it
  expires. No
  reference (the app not installed for the person): 400 ``invalid_to_number``. The
  interaction's provider ref is ``<conversation id>|<activity id>``.
- **Replies**: the next message the person writes in their chat with the bot answers
  the latest open ask (``by_pair``: the chat is one person's).
- **Approvals**: an Adaptive Card (1.5) with ``Action.Execute`` Approve / Reject
  (``data.hw`` = ``hw:<id>:<choice>``); the invoke (``adaptiveCard/action``) of one of
  the approval's approvers decides, and is answered with the card showing the outcome,
  which also replaces the card in the conversation (``PUT``), for everyone in it.
- **Forms**: a form whose fields all map onto Adaptive Card inputs (``form_card``: text,
  textarea, email, phone number, select, checkbox; not an address) goes out as a card of
  those inputs with a submit ``Action.Execute`` (verb ``form``, ``data.hw`` =
  ``hw:<id>:form``). The invoke of the form's own recipient is its submission, checked by
  the same validation as the form page's; accepted, the card is replaced with the
  outcome (as an approval's), refused, the person is told why and the card stays. Any
  other form goes out as its text with the page's link.
- **Confirming a person's address**: ``send_confirm`` posts a card with a **Confirm**
  ``Action.Submit`` (``data.hw`` = ``hw:<token>:confirm``, the people directory's
  one-time token) in the install's conversation; the press, a message activity whose
  ``value`` is that data, goes to ``InboundPort.bind_chat`` with the presser's id. The
  presser is told the outcome in their chat; once bound, the card shows it.

Each activity is taken once (its conversation and id).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
from starlette.routing import BaseRoute

from ...background.work import BackgroundWork
from ..base import Credentials, Outbound, ProviderFailure, RecipientUnreachable, Sent
from .auth import KeySet
from .certificate import ASSERTION_TYPE, CertificateCredential, CertificateProblem

if TYPE_CHECKING:
    from humanwire.types import Form, FormField

    from ...config import TeamsConfig
    from ..port import InboundPort

__all__ = [
    "CARD",
    "ROUTE_PREFIX",
    "SCOPE",
    "TeamsProvider",
    "activity_ref",
    "approval_card",
    "confirm_card",
    "form_card",
    "outcome_card",
]

logger = logging.getLogger("humanwire.teams")

ROUTE_PREFIX = "/providers/teams"
SCOPE = "https://api.botframework.com/.default"
CARD = "application/vnd.microsoft.card.adaptive"
CARD_VERSION = "1.5"
"""Universal Actions (``Action.Execute``) need Adaptive Cards 1.5."""
REFERENCE_SCOPE = "teams-reference"
CARD_SCOPE = "teams-card"
"""The text of each card sent (by its ref): an invoke does not carry the card back, and
the outcome card shows the ask again."""
ACTIVITY_SCOPE = "teams-activity"
ACTIVITY_TTL = 24 * 3600.0
TOKEN_MARGIN = 300.0
"""Seconds before a bot token's expiry it is renewed."""
SEND_TIMEOUT = 15.0
CHOICES = {"approve": "Approve", "reject": "Reject"}
CONFIRM = "confirm"
"""The token's action of a Confirm card's ``Action.Submit``."""
FORM_VERB = "form"
"""The verb (and the token's action) of a form card's submit."""
TOKEN_KEY = "hw"
"""The key of the token in an action's ``data``; the inputs' values sit beside it, so no
field of a form card may have this id."""
MAX_CARD_BYTES = 25_000
"""A form card larger than this goes out as its page's link: Teams takes a message of
about 28 KB, the activity's envelope included."""


def activity_ref(conversation_id: str, activity_id: str) -> str:
    return f"{conversation_id}|{activity_id}"


def _described(answer: httpx.Response) -> str:
    """``": <error_description>"`` of a token endpoint's refusal (its first line)."""
    try:
        body = answer.json()
    except ValueError:
        return ""
    described = body.get("error_description") if isinstance(body, dict) else None
    if not isinstance(described, str) or not described:
        return ""
    return ": " + described.splitlines()[0][:200]


def _parse_token(value: Any) -> tuple[str, str] | None:
    if not isinstance(value, str):
        return None
    prefix, _, rest = value.partition(":")
    interaction_id, _, action = rest.rpartition(":")
    if prefix != "hw" or not interaction_id or not action:
        return None
    return interaction_id, action


def _text_block(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "wrap": True, **style}


def approval_card(
    text: str, interaction_id: str, page: str | None, queue: str | None = None
) -> dict[str, Any]:
    """An approval's card: its text, Approve and Reject (``Action.Execute``), the page
    and the console's queue (``Action.OpenUrl``, public links only)."""
    actions: list[dict[str, Any]] = [
        {
            "type": "Action.Execute",
            "title": label,
            "verb": choice,
            "data": {"hw": f"hw:{interaction_id}:{choice}"},
            "style": "positive" if choice == "approve" else "destructive",
        }
        for choice, label in CHOICES.items()
    ]
    if page and page.startswith("https://"):
        actions.append({"type": "Action.OpenUrl", "title": "Open the page", "url": page})
    if queue and queue.startswith("https://"):
        actions.append({"type": "Action.OpenUrl", "title": "Open your queue", "url": queue})
    return {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": CARD_VERSION,
        "body": [_text_block(text)],
        "actions": actions,
    }


def confirm_card(text: str, token: str) -> dict[str, Any]:
    """A person's address's Confirm card: ``text`` and Confirm (``Action.Submit``)."""
    return {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": CARD_VERSION,
        "body": [_text_block(text)],
        "actions": [
            {
                "type": "Action.Submit",
                "title": "Confirm",
                "data": {TOKEN_KEY: f"hw:{token}:{CONFIRM}"},
                "style": "positive",
            }
        ],
    }


def _card_input(form_field: FormField) -> dict[str, Any] | None:
    """The Adaptive Card input of ``form_field`` (None: no input can take it)."""
    common: dict[str, Any] = {
        "id": form_field.id,
        "label": form_field.label,
        "isRequired": form_field.required,
    }
    if form_field.required:
        common["errorMessage"] = f"{form_field.label} is required."
    kind = form_field.type
    if kind in ("text", "textarea", "email", "phone_number"):
        text: dict[str, Any] = {"type": "Input.Text", **common}
        if kind == "textarea":
            text["isMultiline"] = True
        elif kind == "email":
            text["style"] = "email"
        elif kind == "phone_number":
            text["style"] = "tel"
        if form_field.placeholder:
            text["placeholder"] = form_field.placeholder
        return text
    if kind == "select":
        choices = [{"title": o.label, "value": o.value} for o in form_field.options or ()]
        select: dict[str, Any] = {
            "type": "Input.ChoiceSet",
            **common,
            "style": "compact",
            "choices": choices,
        }
        if form_field.placeholder:
            select["placeholder"] = form_field.placeholder
        return select
    if kind == "checkbox":
        return {
            "type": "Input.Toggle",
            **common,
            "title": form_field.label,
            "value": "false",
            "valueOn": "true",
            "valueOff": "false",
        }
    return None  # an address: the page checks and suggests it


def form_card(
    form: Form, text: str, interaction_id: str, page: str | None
) -> dict[str, Any] | None:
    """A form's card: its text, title, description and an input per field, submitted by
    ``Action.Execute`` (verb ``form``); None when a field maps onto no card input, a
    field's id is the token's key, or the card would be too large for a message."""
    body: list[dict[str, Any]] = [_text_block(text)] if text else []
    body.append(_text_block(form.title, weight="bolder", size="medium"))
    if form.description:
        body.append(_text_block(form.description, isSubtle=True))
    for form_field in form.fields:
        found = _card_input(form_field)
        if found is None or form_field.id == TOKEN_KEY:
            return None
        body.append(found)
        if form_field.helper_text:
            body.append(_text_block(form_field.helper_text, isSubtle=True, size="small"))
    actions: list[dict[str, Any]] = [
        {
            "type": "Action.Execute",
            "title": form.submit_label or "Submit",
            "verb": FORM_VERB,
            "data": {TOKEN_KEY: f"hw:{interaction_id}:{FORM_VERB}"},
            "style": "positive",
        }
    ]
    if page and page.startswith("https://"):
        actions.append({"type": "Action.OpenUrl", "title": "Open the page", "url": page})
    card = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": CARD_VERSION,
        "body": body,
        "actions": actions,
    }
    if len(json.dumps(card).encode()) > MAX_CARD_BYTES:
        return None
    return card


def submitted_values(data: Mapping[str, Any]) -> dict[str, str]:
    """A form card's inputs as the form page's JSON submit reads them (the token left
    out): text as sent, a boolean as ``"true"``/``"false"``, a number as written; an empty
    or null input is a field not answered. Anything else is refused naming the value
    (``InvalidRequest``, field ``values.<id>``), as the page refuses it."""
    from ...errors import InvalidRequest

    values: dict[str, str] = {}
    for key, value in data.items():
        if key == TOKEN_KEY or value is None:
            continue
        if isinstance(value, bool):
            values[key] = "true" if value else "false"
        elif isinstance(value, (int, float)):
            values[key] = json.dumps(value)
        elif isinstance(value, str):
            if value.strip():
                values[key] = value
        else:
            raise InvalidRequest(f"values.{key} must be a string", field=f"values.{key}")
    return values


def outcome_card(text: str, outcome: str) -> dict[str, Any]:
    """The card once decided or closed: its text and the outcome, no actions."""
    return {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": CARD_VERSION,
        "body": [_text_block(text), _text_block(outcome, weight="bolder")],
    }


class TeamsProvider:
    name = "teams"
    channels = ("teams",)

    def __init__(
        self,
        config: TeamsConfig,
        inbound: InboundPort,
        *,
        public_url: str,
        keys: KeySet | None = None,
    ) -> None:
        self.config = config
        self.inbound = inbound
        self.public_url = public_url.rstrip("/")
        self.bot_id = f"28:{config.app_id}"
        self.keys = keys or KeySet()
        self.keys.on_miss = lambda: self.spawn(self._load_keys())
        self.credentials = Credentials()
        self.background = BackgroundWork("the Teams provider")
        self._http: httpx.AsyncClient | None = None
        self._token: tuple[str, float] | None = None
        self._token_lock = asyncio.Lock()
        self._certificate: CertificateCredential | None = None
        self._certificate_problem: str | None = None
        if config.certificate is not None:
            try:
                self._certificate = CertificateCredential.load(
                    config.certificate, config.private_key or config.certificate
                )
            except CertificateProblem as exc:
                self._certificate_problem = f"teams.certificate: {exc}"

    # -- identity ------------------------------------------------------------------
    @property
    def senders(self) -> Mapping[str, str]:
        return {"teams": self.bot_id}

    @property
    def messaging_endpoint(self) -> str:
        return f"{self.public_url}{ROUTE_PREFIX}/messages"

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=SEND_TIMEOUT)
        return self._http

    async def start(self) -> None:
        await self._load_keys()
        try:
            await self._bot_token()
        except ProviderFailure as exc:
            logger.error("Teams: %s", exc)
            refused = "refused" in str(exc) or self._certificate_problem is not None
            self.credentials = Credentials("refused" if refused else "unverified", f"teams: {exc}")
            return
        if not len(self.keys):
            self.credentials = Credentials(
                "unverified", "teams.jwks_url gave no keys: every activity would be refused"
            )
            return
        self.credentials = Credentials("accepted", f"{self._credential} accepted by Microsoft")

    async def _load_keys(self) -> None:
        try:
            answer = await self._client().get(self.config.jwks_url)
            answer.raise_for_status()
            document = answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            logger.error("Teams: the Bot Framework's keys could not be read: %s", exc)
            return
        if isinstance(document, dict):
            self.keys.load(document)

    async def aclose(self) -> None:
        await self.background.cancel()
        if self._http is not None:
            await self._http.aclose()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        self.background.spawn(work)

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        return sender == self.bot_id

    async def hang_up(self, ref: str) -> None:
        """Teams carries no calls here."""

    # -- the bot's token -----------------------------------------------------------
    @property
    def _credential(self) -> str:
        return "teams.certificate" if self.config.certificate is not None else "teams.app_password"

    def _token_request(self) -> dict[str, str]:
        """The client-credentials form: the secret, or a fresh client assertion signed
        with the certificate's key (``certificate``)."""
        form = {
            "grant_type": "client_credentials",
            "client_id": self.config.app_id,
            "scope": SCOPE,
        }
        if self.config.certificate is None:
            return {**form, "client_secret": self.config.app_password or ""}
        if self._certificate is None:
            raise ProviderFailure(str(self._certificate_problem))
        assertion = self._certificate.assertion(self.config.app_id, self.config.token_endpoint)
        return {**form, "client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion}

    async def _bot_token(self) -> str:
        async with self._token_lock:
            if self._token is not None and self._token[1] - TOKEN_MARGIN > time.time():
                return self._token[0]
            form = self._token_request()
            try:
                answer = await self._client().post(self.config.token_endpoint, data=form)
            except httpx.HTTPError as exc:
                raise ProviderFailure(f"Microsoft's token endpoint unreachable ({exc!r})") from None
            if answer.status_code in (400, 401):
                raise ProviderFailure(
                    f"teams.app_id / {self._credential} refused by the token endpoint "
                    f"({answer.status_code}{_described(answer)})"
                )
            try:
                body = answer.json()
                token, lifetime = str(body["access_token"]), float(body.get("expires_in", 3600))
            except (ValueError, KeyError, TypeError):
                raise ProviderFailure(
                    f"the token endpoint answered {answer.status_code} without a token"
                ) from None
            self._token = (token, time.time() + lifetime)
            return token

    async def _connector(
        self, method: str, service_url: str, path: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        token = await self._bot_token()
        url = f"{service_url.rstrip('/')}/v3/{path}"
        try:
            answer = await self._client().request(
                method, url, json=body, headers={"Authorization": f"Bearer {token}"}
            )
        except httpx.HTTPError as exc:
            raise ProviderFailure(f"Teams could not be reached ({exc!r})") from None
        if answer.status_code == 401:
            self._token = None
        if answer.status_code in (403, 404):
            raise RecipientUnreachable(
                f"Teams refused the conversation ({answer.status_code}: {answer.text[:200]}); "
                "is the app still installed for the person?"
            )
        if answer.status_code == 429:
            retry = answer.headers.get("retry-after", "")
            raise ProviderFailure(
                "Teams rate limited the message",
                retry_after=float(retry) if retry.isdigit() else 1.0,
            )
        if answer.status_code >= 400:
            raise ProviderFailure(
                f"Teams refused the message ({answer.status_code}: {answer.text[:200]})"
            )
        try:
            found = answer.json() if answer.content else {}
        except ValueError:
            found = {}
        return found if isinstance(found, dict) else {}

    # -- conversation references ---------------------------------------------------
    async def reference(self, user_id: str) -> dict[str, Any] | None:
        """The conversation reference the person's install gave (None: not installed)."""
        return await self.inbound.state.get_provider_state(REFERENCE_SCOPE, user_id)

    async def _remember(self, activity: Mapping[str, Any]) -> None:
        user = activity["from"]
        conversation = activity["conversation"]
        reference = {
            "conversationId": conversation["id"],
            "serviceUrl": activity["serviceUrl"],
            "tenantId": _tenant(activity),
            "name": user.get("name"),
            "aadObjectId": user.get("aadObjectId"),
        }
        await self.inbound.state.put_provider_state(
            REFERENCE_SCOPE, str(user["id"]), reference, time.time()
        )

    # -- sends ---------------------------------------------------------------------
    async def deliver(self, item: Outbound) -> Sent:
        reference = await self.reference(item.to_addr)
        if reference is None:
            raise RecipientUnreachable(
                f"the app is not installed for {item.to_addr} in Teams: the person (or "
                "their admin) installs it first (docs/going-live/teams.md)"
            )
        conversation = str(reference["conversationId"])
        activity = await self._activity(item)
        sent = await self._connector(
            "POST",
            str(reference["serviceUrl"]),
            f"conversations/{quote(conversation, safe=':@;=')}/activities",
            activity,
        )
        if not sent.get("id"):
            raise ProviderFailure("Teams answered the send without an activity id")
        ref = activity_ref(conversation, str(sent["id"]))
        if "attachments" in activity:
            await self.inbound.state.put_provider_state(
                CARD_SCOPE, ref, {"text": item.text}, time.time()
            )
        return Sent(ref=ref, status="sent")

    async def send_confirm(self, to: str, text: str, token: str) -> None:
        """``ConfirmButtons``: the Confirm card in ``to``'s chat with the bot."""
        reference = await self.reference(to)
        if reference is None:
            raise RecipientUnreachable(
                f"the app is not installed for {to} in Teams: the person (or their admin) "
                "installs it first (docs/going-live/teams.md)"
            )
        conversation = str(reference["conversationId"])
        card = confirm_card(text, token)
        sent = await self._connector(
            "POST",
            str(reference["serviceUrl"]),
            f"conversations/{quote(conversation, safe=':@;=')}/activities",
            {"type": "message", "attachments": [{"contentType": CARD, "content": card}]},
        )
        if sent.get("id"):
            await self.inbound.state.put_provider_state(
                CARD_SCOPE, activity_ref(conversation, str(sent["id"])), {"text": text}, time.time()
            )

    async def _confirm_press(self, activity: Mapping[str, Any], token: str) -> None:
        """A Confirm card's press: bound only when the presser is the address's user
        (``bind_chat`` decides); the presser is told, in their own chat."""
        binding = await self.inbound.bind_chat("teams", token, str(activity["from"]["id"]))
        reply_to = activity.get("replyToId")
        if binding.bound and isinstance(reply_to, str) and reply_to:
            conversation = str(activity["conversation"]["id"])
            sent = await self.inbound.state.get_provider_state(
                CARD_SCOPE, activity_ref(conversation, reply_to)
            )
            if sent is not None:
                card = outcome_card(str(sent.get("text") or ""), f"✅ {binding.text}")
                await self._replace(activity, reply_to, card)
        conversation = str(activity["conversation"]["id"])
        try:
            await self._connector(
                "POST",
                str(activity["serviceUrl"]),
                f"conversations/{quote(conversation, safe=':@;=')}/activities",
                {"type": "message", "text": binding.text, "textFormat": "plain"},
            )
        except (ProviderFailure, RecipientUnreachable) as exc:
            logger.warning("Teams: the confirmation's outcome was not told: %s", exc)

    async def _activity(self, item: Outbound) -> dict[str, Any]:
        if item.interaction_id and item.kind == "form":
            record = await self.inbound.interaction(item.interaction_id)
            card = (
                form_card(self.inbound.form_of(record), item.text, record.id, item.form_url)
                if record is not None
                else None
            )
            if card is not None:
                return {"type": "message", "attachments": [{"contentType": CARD, "content": card}]}
        if item.interaction_id and item.kind == "message" and item.form_url:
            position = await self.inbound.button_approver(
                "teams", item.interaction_id, item.to_addr
            )
            if position is not None:
                card = approval_card(item.text, item.interaction_id, item.form_url, item.queue_url)
                return {
                    "type": "message",
                    "attachments": [{"contentType": CARD, "content": card}],
                }
        return {"type": "message", "text": item.text, "textFormat": "plain"}

    # -- activities ----------------------------------------------------------------
    async def first_delivery(self, activity: Mapping[str, Any]) -> bool:
        """False for an activity seen before (its conversation and id)."""
        store = self.inbound.state
        now = time.time()
        key = f"{activity['conversation']['id']}|{activity['id']}"
        if not await store.claim_provider_state(ACTIVITY_SCOPE, key, {"at": now}, now):
            return False
        await store.delete_provider_state_before(ACTIVITY_SCOPE, now - ACTIVITY_TTL)
        return True

    def tenant_allowed(self, activity: Mapping[str, Any]) -> bool:
        """A single-tenant bot takes its tenant's activities only."""
        return self.config.tenant_id is None or _tenant(activity) == self.config.tenant_id

    async def on_activity(self, activity: Mapping[str, Any]) -> dict[str, Any] | None:
        """What the route answers (None: an empty 200)."""
        kind = activity["type"]
        personal = activity["conversation"].get("conversationType", "personal") == "personal"
        if kind == "installationUpdate" and personal:
            if activity.get("action") in ("add", "add-upgrade"):
                await self._remember(activity)
            elif activity.get("action") in ("remove", "remove-upgrade"):
                await self.inbound.state.delete_provider_state(
                    REFERENCE_SCOPE, str(activity["from"]["id"])
                )
            return None
        if kind == "conversationUpdate" and personal:
            added = [m.get("id") for m in activity.get("membersAdded") or ()]
            if self.bot_id in added or activity["recipient"].get("id") in added:
                await self._remember(activity)
            return None
        if kind == "message" and personal:
            await self._remember(activity)  # the serviceUrl may have moved
            value = activity.get("value")
            if isinstance(value, Mapping) and TOKEN_KEY in value:
                # An Action.Submit's press: only a Confirm card's carries a token's data.
                parsed = _parse_token(value.get(TOKEN_KEY))
                if parsed is not None and parsed[1] == CONFIRM:
                    await self._confirm_press(activity, parsed[0])
                return None
            await self._message(activity)
            return None
        if kind == "invoke" and activity.get("name") == "adaptiveCard/action":
            return await self._invoke(activity)
        return None

    async def _message(self, activity: Mapping[str, Any]) -> None:
        from ..port import InboundText

        text = _plain(activity.get("text"))
        if not text:
            return
        await self.inbound.receive_text(
            InboundText(
                channel="teams",
                from_addr=str(activity["from"]["id"]),
                to_addr=self.bot_id,
                body=text,
                ref=f"teams:{activity['conversation']['id']}|{activity['id']}",
            )
        )

    async def _invoke(self, activity: Mapping[str, Any]) -> dict[str, Any]:
        action = activity["value"]["action"]
        data = action.get("data") if isinstance(action.get("data"), Mapping) else {}
        parsed = _parse_token(data.get(TOKEN_KEY))
        if parsed is not None and parsed[1] == FORM_VERB and action.get("verb") == FORM_VERB:
            return await self._submit(activity, parsed[0], data)
        if parsed is None or parsed[1] not in CHOICES or action.get("verb") != parsed[1]:
            return _message_answer("This is not one of this service's buttons.")
        interaction_id, choice = parsed
        user = str(activity["from"]["id"])
        position = await self.inbound.button_approver("teams", interaction_id, user)
        if position is None:
            return _message_answer("This approval is not yours to decide.")
        result, text = await self.inbound.decide_by_button(
            "teams", interaction_id, position, user, choice
        )
        if result == "already":
            return _message_answer("You decided this approval already.")
        if result not in ("recorded", "closed"):
            return _message_answer(text or "This approval is not yours to decide.")
        name = activity["from"].get("name") or user
        done = "✅ Approved" if choice == "approve" else "❌ Rejected"
        outcome = f"{done} by {name}" if result == "recorded" else f"🔒 {text}"
        return await self._outcome(activity, outcome)

    async def _outcome(self, activity: Mapping[str, Any], outcome: str) -> dict[str, Any]:
        """The invoke's answer replacing the clicked card with its text and ``outcome``."""
        reply_to = activity.get("replyToId")
        conversation = str(activity["conversation"]["id"])
        sent = (
            await self.inbound.state.get_provider_state(
                CARD_SCOPE, activity_ref(conversation, reply_to)
            )
            if isinstance(reply_to, str) and reply_to
            else None
        )
        asked = str((sent or {}).get("text") or "")
        card = outcome_card(asked, outcome)
        if sent is not None and isinstance(reply_to, str):
            # The invoke's answer changes the card for whoever clicked; everyone else in
            # the conversation sees it once the activity itself is replaced.
            self.spawn(self._replace(activity, reply_to, card))
        return {"statusCode": 200, "type": CARD, "value": card}

    async def _submit(
        self, activity: Mapping[str, Any], interaction_id: str, data: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A form card's submit: the form's submission when the presser is its recipient."""
        from ...errors import Conflict, Gone, InvalidRequest

        user = str(activity["from"]["id"])
        record = await self.inbound.interaction(interaction_id)
        if (
            record is None
            or record.channel != "teams"
            or record.kind != "form"
            or record.form_token is None
            or record.to_addr != user
        ):
            return _message_answer("This form is not yours to fill in.")
        try:
            await self.inbound.submit_form(record.form_token, submitted_values(data))
        except Conflict:
            return _message_answer("This form was submitted already.")
        except Gone:
            return await self._outcome(activity, "🔒 This form has expired: nothing was submitted.")
        except InvalidRequest as exc:
            # The message names the field (FormInvalid: "<field id>: <what is wrong>").
            reason = exc.message.rstrip(".")
            return _message_answer(f"Not submitted: {reason}. Change it and submit again.")
        name = activity["from"].get("name") or user
        return await self._outcome(activity, f"✅ Submitted by {name}")

    async def _replace(
        self, activity: Mapping[str, Any], activity_id: str, card: dict[str, Any]
    ) -> None:
        conversation = str(activity["conversation"]["id"])
        try:
            await self._connector(
                "PUT",
                str(activity["serviceUrl"]),
                f"conversations/{quote(conversation, safe=':@;=')}/activities/"
                f"{quote(activity_id, safe='')}",
                {"type": "message", "attachments": [{"contentType": CARD, "content": card}]},
            )
        except (ProviderFailure, RecipientUnreachable) as exc:
            logger.warning("Teams: the card of %s was not replaced: %s", activity_id, exc)

    # -- routes --------------------------------------------------------------------
    def routes(self) -> list[BaseRoute]:
        from .routes import teams_routes

        return list(teams_routes(self))


def _tenant(activity: Mapping[str, Any]) -> str | None:
    conversation = activity.get("conversation") or {}
    tenant = conversation.get("tenantId")
    if isinstance(tenant, str) and tenant:
        return tenant
    channel_data = activity.get("channelData")
    if isinstance(channel_data, Mapping) and isinstance(channel_data.get("tenant"), Mapping):
        found = channel_data["tenant"].get("id")
        return found if isinstance(found, str) else None
    return None


def _plain(text: Any) -> str:
    """A message's text without the bot's @-mention (Teams wraps it in ``<at>``)."""
    if not isinstance(text, str):
        return ""
    import re

    return re.sub(r"<at>[^<]*</at>", "", text).strip()


def _message_answer(text: str) -> dict[str, Any]:
    """An invoke answered with a message shown to the person who acted."""
    return {"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": text}
