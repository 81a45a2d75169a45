"""``DiscordProvider``: the discord channel through a Discord application's bot
(discord.py's REST client, the ``discord`` extra; docs/going-live/discord.md). There is
no gateway: everything a person does arrives as an interaction on the service's own
endpoint (``routes``), answered in its HTTP response within Discord's 3 s.

- **Sends**: ``to`` is a user id (the DM channel is opened, then posted to; the person
  must share a server with the app: 50278 otherwise, 400 ``invalid_to_number``) or a
  channel id of a server the app is in. The interaction's provider ref is ``<channel
  id>:<message id>``. A message awaiting an answer carries a **Reply** button
  (``hw:<interaction id>:reply``).
- **Replies**: Reply opens a modal with one paragraph input; its submission is the
  answer (``InboundText`` in the interaction's thread), and the message is updated to
  show it, the button gone. In a DM only its person may answer; in a channel, anyone
  there.
- **Approvals**: Approve / Reject buttons (``hw:<id>:approve``); a click by one of the
  approval's approvers decides, answered by updating the message (type 7) to show the
  outcome, the buttons gone; anyone else is told so (an ephemeral message).
- **Confirming a person's address**: ``send_confirm`` DMs the user a **Confirm** button
  (``hw:<token>:confirm``, the people directory's one-time token); a press goes to
  ``InboundPort.bind_chat`` with the presser's id, and the message is updated to say
  the address is confirmed, or the presser is told why not (an ephemeral message).
- **Forms**: a form that fits a modal (``form_modal``: at most 5 text-like fields,
  labels of at most 45 characters) gets a **Fill in** button opening it, the submission
  is the form's; any other goes out as its page's link (a link button too when the page
  is https, as Discord requires).

Each interaction is taken once (its id). An answer whose work outlasts the budget
(``ANSWER_BUDGET``) is acknowledged (type 6) and finished through the interaction's
token.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute

from ...background.work import BackgroundWork
from ..base import Credentials, Outbound, ProviderFailure, RecipientUnreachable, Sent

if TYPE_CHECKING:
    from discord.http import HTTPClient

    from humanwire.types import Form

    from ...config import DiscordConfig
    from ...store.records import InteractionRecord
    from ..port import InboundPort

__all__ = [
    "ANSWER_BUDGET",
    "DEFAULT_API_BASE",
    "ROUTE_PREFIX",
    "TEXT_LIMIT",
    "DiscordProvider",
    "custom_id",
    "form_modal",
    "message_ref",
]

logger = logging.getLogger("humanwire.discord")

ROUTE_PREFIX = "/providers/discord"
DEFAULT_API_BASE = "https://discord.com/api/v10"
TEXT_LIMIT = 2000
"""Characters of one Discord message."""
INTERACTION_SCOPE = "discord-interaction"
INTERACTION_TTL = 24 * 3600.0
"""An interaction's token lasts 15 minutes; its id is remembered for a day."""
ANSWER_BUDGET = 2.0
"""Seconds an answer's work may take before the interaction is acknowledged without it
(Discord drops an interaction not answered within 3 s)."""
REF_WAIT = 1.0
"""How long a click on our message waits for its send to be recorded."""
SEND_TIMEOUT = 15.0
EPHEMERAL = 64
"""Message flag: shown only to the person who acted."""
CHOICES = {"approve": "Approve", "reject": "Reject"}
MAX_MODAL_INPUTS = 5
MAX_INPUT_LABEL = 45
MAX_MODAL_TITLE = 45
MAX_PLACEHOLDER = 100
MODAL_FIELD_TYPES = ("text", "textarea", "email", "phone_number")
"""Form fields a modal's text input can take (a select, checkbox or address cannot)."""
REPLY_INPUT = "reply"
CONFIRM = "confirm"

# Discord's JSON error codes the sends tell apart.
UNKNOWN_CHANNEL = 10003
UNKNOWN_USER = 10013
MISSING_ACCESS = 50001
CANNOT_DM = 50007
INVALID_RECIPIENTS = 50033
NO_MUTUAL_GUILD = 50278


def message_ref(channel_id: int | str, message_id: int | str) -> str:
    return f"{channel_id}:{message_id}"


def custom_id(interaction_id: str, action: str) -> str:
    """A component's (or modal's) ``custom_id``: ``hw:<interaction id>:<action>``, at most
    100 characters (Discord's limit)."""
    value = f"hw:{interaction_id}:{action}"
    if len(value) > 100:
        raise ValueError(f"custom_id over 100 characters: {value!r}")
    return value


def _parse_custom_id(value: str) -> tuple[str, str] | None:
    prefix, _, rest = value.partition(":")
    interaction_id, _, action = rest.rpartition(":")
    if prefix != "hw" or not interaction_id or not action:
        return None
    return interaction_id, action


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _button(label: str, style: int, custom: str) -> dict[str, Any]:
    return {"type": 2, "style": style, "label": label, "custom_id": custom}


def _link(label: str, url: str) -> dict[str, Any]:
    return {"type": 2, "style": 5, "label": label, "url": url}


def _row(*buttons: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": 1, "components": list(buttons)}]


def form_modal(form: Form, custom: str) -> dict[str, Any] | None:
    """The modal (an interaction answer's ``data``) filling ``form``, or None when the
    form does not fit one: more than 5 fields, a field a text input cannot take, a label
    over 45 characters or a field id over 100."""
    if len(form.fields) > MAX_MODAL_INPUTS:
        return None
    rows: list[dict[str, Any]] = []
    for field in form.fields:
        if field.type not in MODAL_FIELD_TYPES or len(field.label) > MAX_INPUT_LABEL:
            return None
        if len(field.id) > 100:
            return None
        text_input: dict[str, Any] = {
            "type": 4,
            "custom_id": field.id,
            "label": field.label,
            "style": 2 if field.type == "textarea" else 1,
            "required": field.required,
        }
        if field.placeholder and len(field.placeholder) <= MAX_PLACEHOLDER:
            text_input["placeholder"] = field.placeholder
        rows.append({"type": 1, "components": [text_input]})
    return {"custom_id": custom, "title": _clip(form.title, MAX_MODAL_TITLE), "components": rows}


def _ephemeral(text: str) -> dict[str, Any]:
    return {"type": 4, "data": {"content": _clip(text, TEXT_LIMIT), "flags": EPHEMERAL}}


def _updated(original: str, outcome: str) -> dict[str, Any]:
    """An UPDATE_MESSAGE answer: the message's text with ``outcome`` below, no buttons."""
    room = TEXT_LIMIT - len(outcome) - 2
    text = f"{_clip(original, room)}\n\n{outcome}" if original else outcome
    return {"type": 7, "data": {"content": _clip(text, TEXT_LIMIT), "components": []}}


def user_of(payload: Mapping[str, Any]) -> str:
    """Who acted: ``member.user`` in a server, ``user`` in a DM."""
    member = payload.get("member")
    user = member.get("user") if isinstance(member, Mapping) else payload.get("user")
    return str(user["id"]) if isinstance(user, Mapping) else ""


def _submitted(payload: Mapping[str, Any]) -> dict[str, str]:
    """A modal submission's values by input ``custom_id``."""
    values: dict[str, str] = {}
    for row in (payload.get("data") or {}).get("components") or ():
        for item in row.get("components") or ():
            if isinstance(item.get("custom_id"), str) and isinstance(item.get("value"), str):
                values[item["custom_id"]] = item["value"]
    return values


class DiscordProvider:
    name = "discord"
    channels = ("discord",)

    def __init__(self, config: DiscordConfig, inbound: InboundPort, *, public_url: str) -> None:
        self.config = config
        self.inbound = inbound
        self.public_url = public_url.rstrip("/")
        self._http: HTTPClient | None = None
        self._base: str | None = None
        self._login = asyncio.Lock()
        self._dm_channels: dict[str, str] = {}
        self.bot_id = ""
        self.credentials = Credentials()
        self.background = BackgroundWork("the Discord provider")

    # -- identity ------------------------------------------------------------------
    @property
    def senders(self) -> Mapping[str, str]:
        return {"discord": self.bot_id}

    @property
    def interactions_url(self) -> str:
        return f"{self.public_url}{ROUTE_PREFIX}/interactions"

    async def _client(self) -> HTTPClient:
        """The REST client, logged in (``GET /users/@me`` gives the bot's id)."""
        async with self._login:
            if self._http is not None and self.bot_id:
                return self._http
            import discord.http

            # discord.py reads one REST base for the whole process (Route.BASE): a
            # deployment talks to one Discord, tests to their fake.
            base = self.config.api_base.rstrip("/")
            if base != discord.http.Route.BASE:
                self._base = self._base or discord.http.Route.BASE
                discord.http.Route.BASE = base
            if self._http is None:
                # Long rate limits raise (RateLimited) rather than hold a send for minutes.
                self._http = discord.http.HTTPClient(
                    asyncio.get_running_loop(), max_ratelimit_timeout=10.0
                )
            me = await self._http.static_login(self.config.bot_token)
            self.bot_id = str(me["id"])
            return self._http

    async def start(self) -> None:
        import aiohttp
        import discord

        try:
            http = await self._client()
            app = await http.application_info()
        except discord.LoginFailure:
            logger.error("Discord refused discord.bot_token (GET /users/@me)")
            self.credentials = Credentials("refused", "discord.bot_token refused by Discord")
            return
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            # Not fatal: sends try again, and say what is wrong.
            logger.error("Discord could not be reached at start: %s", exc)
            self.credentials = Credentials(
                "unverified", f"Discord could not be reached at start ({exc})"
            )
            return
        if str(app.get("id")) != self.config.application_id:
            self.credentials = Credentials(
                "refused", "discord.application_id is not the bot token's application"
            )
        elif str(app.get("verify_key", "")).lower() != self.config.public_key.lower():
            self.credentials = Credentials(
                "refused", "discord.public_key is not the application's public key"
            )
        else:
            self.credentials = Credentials("accepted", "discord.bot_token accepted by Discord")
        if not self.credentials.ready:
            logger.error("Discord: %s", self.credentials.detail)

    async def aclose(self) -> None:
        await self.background.cancel()
        if self._http is not None:
            await self._http.close()
        if self._base is not None:
            import discord.http

            discord.http.Route.BASE = self._base

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Work that goes on after Discord's request was answered."""
        self.background.spawn(work)

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        return sender == self.bot_id

    async def hang_up(self, ref: str) -> None:
        """Discord carries no calls."""

    # -- sends ---------------------------------------------------------------------
    async def deliver(self, item: Outbound, components: list[Any] | None = None) -> Sent:
        import aiohttp
        import discord

        try:
            return await asyncio.wait_for(self._deliver(item, components), SEND_TIMEOUT)
        except (RecipientUnreachable, ProviderFailure):
            raise
        except discord.RateLimited as exc:
            raise ProviderFailure(
                "Discord rate limited the message", retry_after=exc.retry_after
            ) from None
        except discord.HTTPException as exc:
            raise ProviderFailure(
                f"Discord refused the message ({exc.status}: {exc.text})"
            ) from None
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
            raise ProviderFailure(f"Discord could not be reached ({exc!r})") from None

    async def _deliver(self, item: Outbound, components: list[Any] | None = None) -> Sent:
        import discord
        from discord.http import Route

        http = await self._client()
        channel_id = await self._channel_for(http, item.to_addr)
        body: dict[str, Any] = {
            "content": _clip(item.text, TEXT_LIMIT),
            # The ask's text is the person's to read, not a ping of everyone it names.
            "allowed_mentions": {"parse": []},
        }
        if components is None:
            components = await self._components(item)
        if components:
            body["components"] = components
        try:
            posted = await http.request(
                Route("POST", "/channels/{channel_id}/messages", channel_id=channel_id), json=body
            )
        except discord.HTTPException as exc:
            if exc.code == NO_MUTUAL_GUILD:
                raise RecipientUnreachable(
                    f"the app cannot DM {item.to_addr}: the person shares no server with it "
                    f"(Discord: {exc.text})"
                ) from None
            if exc.code in (CANNOT_DM, MISSING_ACCESS, UNKNOWN_CHANNEL):
                raise RecipientUnreachable(
                    f"the app cannot post to {item.to_addr} (Discord: {exc.text})"
                ) from None
            raise
        return Sent(ref=message_ref(posted["channel_id"], posted["id"]), status="sent")

    async def _channel_for(self, http: HTTPClient, to: str) -> str:
        """The channel to post to: a user's DM channel (opened once), else ``to`` itself,
        a channel id (snowflakes are unique across kinds, so one is never the other)."""
        import discord

        if to in self._dm_channels:
            return self._dm_channels[to]
        try:
            dm = await http.start_private_message(int(to))
        except discord.HTTPException as exc:
            if exc.code in (UNKNOWN_USER, INVALID_RECIPIENTS):
                return to
            raise
        self._dm_channels[to] = str(dm["id"])
        return self._dm_channels[to]

    async def _components(self, item: Outbound) -> list[dict[str, Any]]:
        if not item.interaction_id:
            return []
        url = item.form_url
        page = [_link("Open the page", url)] if url and _public(url) else []
        if item.kind == "message" and item.form_url:
            # An approval request's text carries its approver's page: the buttons too.
            position = await self.inbound.button_approver(
                "discord", item.interaction_id, item.to_addr
            )
            if position is not None:
                buttons = [
                    _button(
                        label,
                        3 if choice == "approve" else 4,
                        custom_id(item.interaction_id, choice),
                    )
                    for choice, label in CHOICES.items()
                ]
                queue_url = item.queue_url
                queue = (
                    [_link("Open your queue", queue_url)]
                    if queue_url is not None and _public(queue_url)
                    else []
                )
                return _row(*buttons, *page, *queue)
            return _row(*page) if page else []
        if item.kind == "form":
            record = await self.inbound.interaction(item.interaction_id)
            fits = record is not None and form_modal(
                self.inbound.form_of(record), custom_id(item.interaction_id, "form")
            )
            fill = [_button("Fill in", 1, custom_id(item.interaction_id, "form"))] if fits else []
            return _row(*fill, *page) if fill or page else []
        if item.kind == "message" and item.listening:
            return _row(_button("Reply", 1, custom_id(item.interaction_id, REPLY_INPUT)))
        return []

    async def send_confirm(self, to: str, text: str, token: str) -> None:
        """``ConfirmButtons``: the DM with a Confirm button carrying ``token``. Raises as
        ``deliver`` does (a user sharing no server with the app: ``RecipientUnreachable``)."""
        item = Outbound(
            account_id="",
            interaction_id=None,  # no interaction: the press is the answer
            channel="discord",
            kind="message",
            from_addr=self.bot_id,
            to_addr=to,
            text=text,
            listening=False,
        )
        await self.deliver(item, _row(_button("Confirm", 3, custom_id(token, CONFIRM))))

    # -- interactions --------------------------------------------------------------
    async def first_delivery(self, interaction_id: str) -> bool:
        """False for an interaction seen before: Discord sends each once, so a second is
        a replay."""
        store = self.inbound.state
        now = time.time()
        if not await store.claim_provider_state(
            INTERACTION_SCOPE, interaction_id, {"at": now}, now
        ):
            return False
        await store.delete_provider_state_before(INTERACTION_SCOPE, now - INTERACTION_TTL)
        return True

    async def on_interaction(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to an interaction of the shape ``routes.interaction_shape`` checked
        (PING is answered by the route)."""
        kind = payload["type"]
        if kind == 2:
            return _ephemeral("This app has no commands: it asks, and you answer with its buttons.")
        if kind == 4:
            return {"type": 8, "data": {"choices": []}}
        parsed = _parse_custom_id(str(payload["data"]["custom_id"]))
        if parsed is None:
            return _ephemeral("This is not one of this service's buttons.")
        interaction_id, action = parsed
        if kind == 3 and action in CHOICES:
            return await self._within_budget(payload, self._decide(payload, interaction_id, action))
        if kind == 3 and action == CONFIRM:
            return await self._within_budget(payload, self._confirm(payload, interaction_id))
        if kind == 3 and action in (REPLY_INPUT, "form"):
            return await self._open(payload, interaction_id, action)
        if kind == 5 and action == REPLY_INPUT:
            return await self._within_budget(payload, self._reply(payload, interaction_id))
        if kind == 5 and action == "form":
            return await self._within_budget(payload, self._submit(payload, interaction_id))
        return _ephemeral("This is not one of this service's buttons.")

    async def _within_budget(
        self, payload: Mapping[str, Any], work: Awaitable[dict[str, Any]]
    ) -> dict[str, Any]:
        """``work``'s answer, or (past ``ANSWER_BUDGET``) an acknowledgement now and the
        answer through the interaction's token once the work is done."""
        task = asyncio.ensure_future(work)
        try:
            return await asyncio.wait_for(asyncio.shield(task), ANSWER_BUDGET)
        except asyncio.TimeoutError:
            self.spawn(self._answer_late(payload, task))
            return {"type": 6}

    async def _answer_late(
        self, payload: Mapping[str, Any], task: Awaitable[dict[str, Any]]
    ) -> None:
        import aiohttp
        import discord
        from discord.http import Route

        answer = await task
        token, app = str(payload["token"]), self.config.application_id
        try:
            http = await self._client()
            if answer.get("type") == 7:
                route = Route(
                    "PATCH",
                    "/webhooks/{webhook_id}/{webhook_token}/messages/@original",
                    webhook_id=app,
                    webhook_token=token,
                )
            else:
                route = Route(
                    "POST",
                    "/webhooks/{webhook_id}/{webhook_token}",
                    webhook_id=app,
                    webhook_token=token,
                )
            await http.request(route, json=answer.get("data") or {})
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            logger.warning(
                "Discord: the late answer to interaction %s failed: %s", payload["id"], exc
            )

    async def _ours(
        self, payload: Mapping[str, Any], interaction_id: str
    ) -> InteractionRecord | None:
        """The interaction the clicked message was sent for, when it is ``interaction_id``
        (a copy of our buttons on another message answers nothing). A click can overtake
        the send's record of its ref, so a miss is looked up again for a moment."""
        message = payload.get("message") or {}
        if not message.get("id"):
            return None
        channel = str(payload.get("channel_id") or message.get("channel_id") or "")
        ref = message_ref(channel, message["id"])
        deadline = time.monotonic() + REF_WAIT
        while True:
            record = await self.inbound.interaction_by_ref(ref)
            if record is not None or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        return record if record is not None and record.id == interaction_id else None

    @staticmethod
    def _may_answer(payload: Mapping[str, Any], record: InteractionRecord) -> bool:
        """In a DM only its person answers; in a server's channel, anyone there."""
        return bool(payload.get("guild_id")) or user_of(payload) == record.to_addr

    async def _open(
        self, payload: Mapping[str, Any], interaction_id: str, action: str
    ) -> dict[str, Any]:
        """Reply or Fill in: the modal, when the ask is the clicker's and still open."""
        record = await self._ours(payload, interaction_id)
        if record is None or not self._may_answer(payload, record):
            return _ephemeral("This ask is not yours to answer.")
        original = str((payload.get("message") or {}).get("content") or "")
        if record.status != "pending":
            return _updated(original, "🔒 This ask is closed.")
        if action == REPLY_INPUT:
            reply = {
                "type": 4,
                "custom_id": REPLY_INPUT,
                "label": "Your reply",
                "style": 2,
                "required": True,
                "max_length": 4000,
            }
            data = {
                "custom_id": custom_id(interaction_id, REPLY_INPUT),
                "title": "Reply",
                "components": [{"type": 1, "components": [reply]}],
            }
            return {"type": 9, "data": data}
        modal = form_modal(self.inbound.form_of(record), custom_id(interaction_id, "form"))
        if modal is None:
            return _ephemeral("Open the form's page from the message to fill it in.")
        return {"type": 9, "data": modal}

    async def _reply(self, payload: Mapping[str, Any], interaction_id: str) -> dict[str, Any]:
        from ..port import InboundText

        record = await self._ours(payload, interaction_id)
        if record is None or record.kind != "message" or not self._may_answer(payload, record):
            return _ephemeral("This ask is not yours to answer.")
        original = str((payload.get("message") or {}).get("content") or "")
        if record.status != "pending":
            return _updated(original, "🔒 This ask is closed: your reply was not taken.")
        text = _submitted(payload).get(REPLY_INPUT, "").strip()
        if not text:
            return _ephemeral("An empty reply answers nothing.")
        user = user_of(payload)
        stored = await self.inbound.receive_text(
            InboundText(
                channel="discord",
                from_addr=user,
                to_addr=self.bot_id,
                body=text,
                thread=record.id,
                ref=f"discord:{payload['id']}",
            ),
            account_id=record.account_id,
        )
        if stored is None or stored.interaction_id != record.id:
            return _updated(original, "🔒 This ask is closed: your reply was not taken.")
        return _updated(original, f"↩️ <@{user}> replied: {text}")

    async def _submit(self, payload: Mapping[str, Any], interaction_id: str) -> dict[str, Any]:
        from ...errors import Conflict, Gone, InvalidRequest

        record = await self._ours(payload, interaction_id)
        if (
            record is None
            or record.kind != "form"
            or record.form_token is None
            or not self._may_answer(payload, record)
        ):
            return _ephemeral("This form is not yours to fill in.")
        original = str((payload.get("message") or {}).get("content") or "")
        # An input left empty is a field not answered (the form's rules say if it may be).
        values = {key: value for key, value in _submitted(payload).items() if value.strip()}
        try:
            await self.inbound.submit_form(record.form_token, values)
        except Conflict:
            return _ephemeral("This form was submitted already.")
        except Gone:
            return _updated(original, "🔒 This form has expired: nothing was submitted.")
        except InvalidRequest as exc:
            return _ephemeral(f"Not submitted: {exc.message} Press Fill in to try again.")
        return _updated(original, "✅ Submitted.")

    async def _confirm(self, payload: Mapping[str, Any], token: str) -> dict[str, Any]:
        """Confirm, pressed: binds only when the presser is the address's user."""
        binding = await self.inbound.bind_chat("discord", token, user_of(payload))
        if not binding.bound:
            return _ephemeral(binding.text)
        original = str((payload.get("message") or {}).get("content") or "")
        return _updated(original, f"✅ {binding.text}")

    async def _decide(
        self, payload: Mapping[str, Any], interaction_id: str, choice: str
    ) -> dict[str, Any]:
        """An approval button: decides when the clicker is one of the approval's
        approvers on discord; the message shows a recorded or closed outcome."""
        user = user_of(payload)
        position = await self.inbound.button_approver("discord", interaction_id, user)
        if position is None:
            return _ephemeral("This approval is not yours to decide.")
        result, text = await self.inbound.decide_by_button(
            "discord", interaction_id, position, user, choice
        )
        original = str((payload.get("message") or {}).get("content") or "")
        if result == "recorded":
            done = "✅ Approved" if choice == "approve" else "❌ Rejected"
            return _updated(original, f"{done} by <@{user}>")
        if result == "closed":
            return _updated(original, f"🔒 {text}")
        if result == "already":
            return _ephemeral("You decided this approval already.")
        return _ephemeral(text or "This approval is not yours to decide.")

    # -- routes --------------------------------------------------------------------
    def routes(self) -> list[BaseRoute]:
        from .routes import discord_routes

        return list(discord_routes(self))


def _public(url: str | None) -> bool:
    """Discord takes only a public link in a link button; the text carries any link."""
    return bool(url) and str(url).startswith("https://")
