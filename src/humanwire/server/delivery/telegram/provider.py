"""``TelegramProvider``: the telegram channel through a real Telegram bot
(python-telegram-bot, the ``telegram`` extra; docs/going-live/telegram.md).

- **Sends**: from the account's own bot when it registered one (``bots``,
  ``POST /telegram/bots``), else from the shared bot (``telegram.bot_token``), to a chat
  id with ``sendMessage``; ``deliveryStatus`` is ``sent`` once Telegram answers. A bot
  cannot write first: a chat that never pressed Start is 400 ``invalid_to_number``
  naming ``to``, as is a chat Telegram does not know. The interaction's provider ref is
  ``<chat id>:<message id>`` (``<bot id>:<chat id>:<message id>`` from an own bot: a
  chat's message ids are per bot), which is how a reply or a button click finds it.
- **Own bots**: registering checks the token with ``getMe`` and points the bot's
  webhook at ``/providers/telegram/bots/<bot id>/updates`` with its own secret
  (``bots.bot_secret``); what arrives there is that bot's account's only (its replies,
  its unsolicited messages, its start links, its buttons). Deleting the bot removes its
  webhook (``deleteWebhook``) and forgets the token. At each start every own bot's
  webhook is set again (in the background, one bot at a time; a failure is logged).
- **Replies** (``/providers/telegram/updates``, ``routes``): a person's message that
  replies to one of the bot's answers that message's interaction (``thread``); any other
  message in the chat answers the latest open message to that chat, with the rules of a
  shared sender when several accounts wait there (the engine's). ``/start`` is not an
  answer. Each update is taken once (its ``update_id``).
- **Start links**: ``start_link`` is the bot's ``https://t.me/<bot>?start=<token>``
  (the people directory's confirmation of a telegram address); ``/start <token>`` in a
  private chat goes to ``InboundPort.bind_chat``, and the chat is told what became of it.
- **Approvals**: an approval request's text goes out with Approve / Reject inline
  buttons carrying ``hw:<interaction id>:<choice>`` (≤ 64 bytes); a press is answered
  (``answerCallbackQuery``) and the message edited to show the outcome, the keyboard
  gone.
- **Forms**: the form page's link, in the text and as a button.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute

from ...background.work import BackgroundWork
from ...errors import Conflict, InvalidRequest, ProviderError
from ..base import Credentials, Outbound, OwnBot, ProviderFailure, RecipientUnreachable, Sent
from .bots import OwnBots, bot_secret

if TYPE_CHECKING:
    from telegram import Bot, InlineKeyboardMarkup

    from ...config import TelegramConfig
    from ...store.records import InteractionRecord
    from ..port import InboundPort

__all__ = ["ROUTE_PREFIX", "TEXT_LIMIT", "TelegramProvider", "button_data", "message_ref"]

logger = logging.getLogger("humanwire.telegram")

ROUTE_PREFIX = "/providers/telegram"
TEXT_LIMIT = 4096
"""Characters of one Telegram message."""
UPDATE_SCOPE = "telegram-update"
UPDATE_TTL = 24 * 3600.0
"""Telegram retries an update it got no 2xx for; an id is remembered for a day."""
REF_WAIT = 5.0
"""How long a reply to (or a click on) our message waits for its send to be recorded."""
CHOICES = {"approve": "Approve", "reject": "Reject"}


def message_ref(chat_id: int | str, message_id: int | str, bot_id: str | None = None) -> str:
    """A sent message's id: Telegram's message ids are unique only within a chat (of one
    bot): the shared bot's are ``<chat>:<message>``, an own bot's carry its id first."""
    return f"{bot_id}:{chat_id}:{message_id}" if bot_id else f"{chat_id}:{message_id}"


@dataclass(frozen=True)
class BotSide:
    """The bot an update arrived at, or a send goes out from: the shared bot
    (``account_id`` None) or an account's own."""

    bot: Bot
    bot_id: str
    account_id: str | None = None

    def ref(self, chat_id: int | str, message_id: int | str) -> str:
        return message_ref(chat_id, message_id, self.bot_id if self.account_id else None)


def button_data(interaction_id: str, choice: str) -> str:
    """An approval button's ``callback_data``: ``hw:<id>:<choice>``, at most 64 bytes
    (Telegram's limit; a 36-character id and ``approve`` take 47)."""
    data = f"hw:{interaction_id}:{choice}"
    if len(data.encode()) > 64:
        raise ValueError(f"callback data over 64 bytes: {data!r}")
    return data


class TelegramProvider:
    name = "telegram"
    channels = ("telegram",)

    def __init__(self, config: TelegramConfig, inbound: InboundPort, *, public_url: str) -> None:
        self.config = config
        self.inbound = inbound
        self.public_url = public_url.rstrip("/")
        self.bot: Bot = self._new_bot(config.bot_token)
        self.bot_id = ""
        self.username = ""
        self.credentials = Credentials()
        self.background = BackgroundWork("the Telegram provider")
        self.bots = OwnBots(inbound.state, config.webhook_secret)
        self._own: dict[str, tuple[str, Bot]] = {}
        """Own bots' clients by bot id, with the token each was made with."""

    def _new_bot(self, token: str) -> Bot:
        from telegram import Bot
        from telegram.request import HTTPXRequest

        return Bot(
            token,
            base_url=f"{self.config.api_base.rstrip('/')}/bot",
            request=HTTPXRequest(connect_timeout=5.0, read_timeout=10.0),
        )

    # -- identity ------------------------------------------------------------------
    @property
    def senders(self) -> Mapping[str, str]:
        return {"telegram": self.bot_id}

    async def start_link(self, account_id: str, token: str) -> tuple[str, str] | None:
        """``StartLinks``: the account's own bot's link when it has one, else the shared
        bot's (None until ``getMe`` told its name)."""
        for own in await self.bots.of_account(account_id):
            return f"https://t.me/{own.username}?start={token}", own.bot_id
        if not self.username:
            return None
        return f"https://t.me/{self.username}?start={token}", self.bot_id

    @property
    def webhook_url(self) -> str:
        return f"{self.public_url}{ROUTE_PREFIX}/updates"

    def bot_webhook_url(self, bot_id: str) -> str:
        return f"{self.public_url}{ROUTE_PREFIX}/bots/{bot_id}/updates"

    def bot_secret(self, bot_id: str) -> str:
        """The secret token of an own bot's webhook (``bots.bot_secret``)."""
        return bot_secret(self.config.webhook_secret, bot_id)

    async def _identify(self) -> None:
        """The bot's id (``getMe``), then the webhook pointed here (``setWebhook`` with
        the secret Telegram echoes on every update)."""
        me = await self.bot.get_me()
        self.bot_id, self.username = str(me.id), me.username or ""
        await self.bot.set_webhook(
            self.webhook_url,
            secret_token=self.config.webhook_secret,
            allowed_updates=["message", "callback_query"],
        )
        self.credentials = Credentials("accepted", "telegram.bot_token accepted by getMe")

    async def start(self) -> None:
        from telegram.error import InvalidToken, TelegramError

        # Beside the start, not before it: one bot at a time, however many there are.
        self.spawn(self._point_own_bots())
        try:
            await self._identify()
        except InvalidToken:
            logger.error("Telegram refused telegram.bot_token (getMe)")
            self.credentials = Credentials("refused", "telegram.bot_token refused by getMe")
        except TelegramError as exc:
            # Not fatal: sends try again, and say what is wrong.
            logger.error("Telegram could not be reached at start: %s", exc)
            self.credentials = Credentials(
                "unverified", f"Telegram could not be reached at start ({exc})"
            )

    async def aclose(self) -> None:
        await self.background.cancel()
        await self.bot.shutdown()
        for _, bot in self._own.values():
            await bot.shutdown()
        self._own.clear()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Work that goes on after Telegram's request was answered."""
        self.background.spawn(work)

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        if sender == self.bot_id:
            return True
        own = await self.bots.get(sender)
        return own is not None and own.account_id == account_id

    async def account_sender(self, account_id: str, channel: str) -> str | None:
        """``AccountSenders``: the account's own bot, which its sends go out from."""
        for own in await self.bots.of_account(account_id):
            return own.bot_id
        return None

    async def hang_up(self, ref: str) -> None:
        """Telegram carries no calls."""

    # -- own bots ------------------------------------------------------------------
    async def register_bot(self, account_id: str, token: str) -> OwnBot:
        """``BotRegistry``: the token checked with ``getMe``, the bot's webhook pointed
        at its own URL with its own secret, then kept (encrypted). Nothing is kept when
        a step fails."""
        from telegram.error import InvalidToken, TelegramError

        bot = self._new_bot(token)
        try:
            try:
                me = await bot.get_me()
            except InvalidToken:
                raise InvalidRequest(
                    "Telegram refused the token (getMe answered Unauthorized): copy it "
                    "again from @BotFather",
                    field="token",
                ) from None
            except TelegramError as exc:
                raise ProviderError(f"Telegram could not check the token ({exc})") from None
            bot_id, username = str(me.id), me.username or ""
            if bot_id == self.bot_id:
                raise InvalidRequest(
                    "this is the shared bot: every account's sends go out from it already",
                    field="token",
                )
            holder = await self.bots.get(bot_id)
            if holder is not None and holder.account_id != account_id:
                raise Conflict(
                    "this bot is registered to another humanwire account; it must delete it first",
                    field="token",
                )
            for other in await self.bots.of_account(account_id):
                if other.bot_id != bot_id:
                    raise Conflict(
                        f"this account has a bot already ({other.username}): delete it "
                        "first (DELETE /telegram/bots/{botId})",
                        field="token",
                    )
            try:
                await bot.set_webhook(
                    self.bot_webhook_url(bot_id),
                    secret_token=self.bot_secret(bot_id),
                    allowed_updates=["message", "callback_query"],
                )
            except TelegramError as exc:
                raise ProviderError(f"Telegram refused the bot's setWebhook ({exc})") from None
        except BaseException:
            await bot.shutdown()
            raise
        saved = await self.bots.save(
            account_id=account_id, bot_id=bot_id, username=username, token=token
        )
        previous = self._own.pop(bot_id, None)
        if previous is not None:
            await previous[1].shutdown()
        self._own[bot_id] = (token, bot)
        logger.info("Telegram bot %s registered by its account", bot_id)
        return replace(saved, webhook_url=self.bot_webhook_url(bot_id))

    async def _point_own_bots(self) -> None:
        """At each start, every registered own bot's webhook set again (its URL under
        this ``public_url``, its secret): a service moved, or a bot pointed elsewhere
        meanwhile, gets its updates here again. A bot that fails (its token revoked,
        unreadable, Telegram unreachable) is logged and the next one goes on."""
        from telegram.error import TelegramError

        for own in sorted(await self.bots.all(), key=lambda found: found.registered_at):
            try:
                side = await self.own_side(own.bot_id)
                if side is None:
                    continue  # its token cannot be read: bots.token said so
                await side.bot.set_webhook(
                    self.bot_webhook_url(own.bot_id),
                    secret_token=self.bot_secret(own.bot_id),
                    allowed_updates=["message", "callback_query"],
                )
            except TelegramError as exc:
                logger.warning("Telegram setWebhook of bot %s at start failed: %s", own.bot_id, exc)
            except Exception:
                logger.exception("Telegram setWebhook of bot %s at start failed", own.bot_id)

    async def bots_of(self, account_id: str) -> list[OwnBot]:
        return [
            replace(own, webhook_url=self.bot_webhook_url(own.bot_id))
            for own in await self.bots.of_account(account_id)
        ]

    async def remove_bot(self, account_id: str, bot_id: str) -> bool:
        """``BotRegistry``: the webhook removed (``deleteWebhook``; a failure is logged:
        the token is forgotten anyway, and what still arrives is refused 404)."""
        from telegram.error import TelegramError

        if not (bot_id.isascii() and bot_id.isdigit() and len(bot_id) <= 20):
            return False  # no bot's id (nor anything the store should see)
        own = await self.bots.get(bot_id)
        if own is None or own.account_id != account_id:
            return False
        side = await self.own_side(bot_id)
        await self.bots.remove(bot_id)
        if side is not None:
            try:
                await side.bot.delete_webhook()
            except TelegramError as exc:
                logger.warning("Telegram deleteWebhook of bot %s failed: %s", bot_id, exc)
        cached = self._own.pop(bot_id, None)
        if cached is not None:
            await cached[1].shutdown()
        logger.info("Telegram bot %s deleted by its account", bot_id)
        return True

    async def own_side(self, bot_id: str) -> BotSide | None:
        """An own bot's client (None: no such bot now, or its token unreadable)."""
        own = await self.bots.get(bot_id)
        if own is None:
            return None
        token = await self.bots.token(bot_id)
        if token is None:
            return None
        cached = self._own.get(bot_id)
        if cached is None or cached[0] != token:
            if cached is not None:
                self.spawn(cached[1].shutdown())
            cached = (token, self._new_bot(token))
            self._own[bot_id] = cached
        return BotSide(cached[1], bot_id, own.account_id)

    def _shared_side(self) -> BotSide:
        return BotSide(self.bot, self.bot_id)

    async def _sending_side(self, item: Outbound) -> BotSide:
        from telegram.error import TelegramError

        sender = item.from_addr or ""
        if sender and sender != self.bot_id:
            side = await self.own_side(sender)
            if side is not None and side.account_id == item.account_id:
                return side
            raise RecipientUnreachable(
                f"the account has no Telegram bot {sender} (any more): register it again",
                field="from",
            )
        if not self.bot_id:
            try:
                await self._identify()
            except TelegramError as exc:
                raise ProviderFailure(f"Telegram refused the bot's getMe ({exc})") from None
        return self._shared_side()

    # -- sends ---------------------------------------------------------------------
    async def deliver(self, item: Outbound) -> Sent:
        from telegram.error import BadRequest, Forbidden, RetryAfter, TelegramError

        side = await self._sending_side(item)
        text = item.text if len(item.text) <= TEXT_LIMIT else item.text[: TEXT_LIMIT - 1] + "…"
        try:
            sent = await side.bot.send_message(
                chat_id=int(item.to_addr),
                text=text,
                reply_markup=await self._keyboard(item),
                link_preview_options=None,
            )
        except Forbidden as exc:
            raise RecipientUnreachable(
                f"the bot cannot write to chat {item.to_addr}: the person must start a chat "
                f"with the bot first (Telegram: {exc.message})"
            ) from None
        except BadRequest as exc:
            if "chat not found" in exc.message.lower():
                raise RecipientUnreachable(
                    f"no Telegram chat {item.to_addr} with this bot (Telegram: {exc.message})"
                ) from None
            raise ProviderFailure(f"Telegram refused the message ({exc.message})") from None
        except RetryAfter as exc:
            retry = exc.retry_after
            seconds = retry if isinstance(retry, (int, float)) else retry.total_seconds()
            raise ProviderFailure(
                "Telegram rate limited the message", retry_after=seconds
            ) from None
        except TelegramError as exc:
            raise ProviderFailure(f"Telegram failed the message ({exc})") from None
        return Sent(ref=side.ref(sent.chat.id, sent.message_id), status="sent")

    async def _keyboard(self, item: Outbound) -> InlineKeyboardMarkup | None:
        from telegram import InlineKeyboardButton, InlineKeyboardMarkup

        if item.form_url and item.interaction_id and item.kind == "message":
            # An approval request's text carries its approver's page: the buttons too.
            position = await self.inbound.button_approver(
                "telegram", item.interaction_id, item.to_addr
            )
            if position is not None:
                rows = [
                    [
                        InlineKeyboardButton(
                            label, callback_data=button_data(item.interaction_id, choice)
                        )
                        for choice, label in CHOICES.items()
                    ]
                ]
                if item.queue_url and item.queue_url.startswith("https://"):
                    # Telegram opens only public links from a button; the text has it.
                    rows.append([InlineKeyboardButton("Open your queue", url=item.queue_url)])
                return InlineKeyboardMarkup(rows)
        if item.form_url and item.kind == "form" and item.form_url.startswith("https://"):
            # Telegram opens only public links from a button; the text carries it anyway.
            return InlineKeyboardMarkup(
                [[InlineKeyboardButton("Open the form", url=item.form_url)]]
            )
        return None

    # -- updates -------------------------------------------------------------------
    async def first_delivery(self, update_id: int, bot_id: str | None = None) -> bool:
        """False for an update seen before (Telegram's retries): answered and dropped.
        Update ids are per bot: an own bot's are kept under its id."""
        store = self.inbound.state
        now = time.time()
        key = f"{bot_id}:{update_id}" if bot_id else str(update_id)
        if not await store.claim_provider_state(UPDATE_SCOPE, key, {"at": now}, now):
            return False
        await store.delete_provider_state_before(UPDATE_SCOPE, now - UPDATE_TTL)
        return True

    async def _posted(
        self, side: BotSide, chat_id: int, message_id: int
    ) -> InteractionRecord | None:
        """The interaction whose message ``message_id`` (of ``side``'s bot) is. A reply
        can overtake Telegram's answer to ``sendMessage`` (the ref is stored once it
        arrives), so a miss is looked up again for a few seconds. An own bot's message is
        its account's only."""
        ref = side.ref(chat_id, message_id)
        deadline = time.monotonic() + REF_WAIT
        while True:
            record = await self.inbound.interaction_by_ref(ref)
            if record is not None or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        if record is not None and side.account_id and record.account_id != side.account_id:
            return None
        return record

    async def on_update(self, update: Mapping[str, Any], side: BotSide | None = None) -> str:
        """An update of the shape ``routes.update_shape`` checked, at the shared bot or
        at an own bot (``side``); returns what became of it, for the log and the tests."""
        side = side or self._shared_side()
        if "callback_query" in update:
            return await self.on_click(update["callback_query"], side)
        message = update.get("message")
        if not isinstance(message, Mapping) or not isinstance(message.get("text"), str):
            return "ignored"  # edits, photos, joins: no answer to read
        sender = message.get("from") or {}
        if sender.get("is_bot"):
            return "ignored"
        text = str(message["text"])
        chat_id = int(message["chat"]["id"])
        if text == "/start" or text.startswith("/start "):
            payload = text.removeprefix("/start").strip()
            if not payload:
                return "ignored"  # the chat opened, no link: nothing to bind
            return await self.on_start(message, chat_id, payload, side)
        from ..port import InboundText

        record = None
        replied = message.get("reply_to_message")
        if isinstance(replied, Mapping) and (replied.get("from") or {}).get("id") == int(
            side.bot_id or 0
        ):
            record = await self._posted(side, chat_id, int(replied["message_id"]))
        stored = await self.inbound.receive_text(
            InboundText(
                channel="telegram",
                from_addr=str(chat_id),
                to_addr=side.bot_id,
                body=text,
                thread=record.id if record is not None else None,
                ref=f"telegram:{side.bot_id}:{message_ref(chat_id, message['message_id'])}",
            ),
            # An own bot's messages are its account's; a reply to one of the shared bot's
            # messages is that account's; any other message in the shared bot's chat is
            # the shared bot's, whose it is the engine settles (shared senders).
            account_id=side.account_id or (record.account_id if record is not None else None),
        )
        if stored is None:
            return "duplicate or nobody's"
        return "matched" if stored.interaction_id else "unsolicited"

    async def on_start(
        self, message: Mapping[str, Any], chat_id: int, token: str, side: BotSide | None = None
    ) -> str:
        """A start link opened (``/start <token>``): binds the chat to the person the
        token was given for (the people directory's, when it was given for this bot),
        and tells the chat the outcome."""
        side = side or self._shared_side()
        if (message.get("chat") or {}).get("type", "private") != "private":
            # A group's chat is nobody's own address: nothing is spent.
            self.spawn(self._say(side, chat_id, "Open the link in your private chat with the bot."))
            return "refused"
        binding = await self.inbound.bind_chat(
            "telegram", token, str(chat_id), sender=side.bot_id or None
        )
        self.spawn(self._say(side, chat_id, binding.text))
        return "bound" if binding.bound else "refused"

    async def _say(self, side: BotSide, chat_id: int, text: str) -> None:
        from telegram.error import TelegramError

        try:
            await side.bot.send_message(chat_id=chat_id, text=text)
        except TelegramError as exc:
            logger.warning("Telegram sendMessage to %s failed: %s", chat_id, exc)

    async def on_click(self, query: Mapping[str, Any], side: BotSide | None = None) -> str:
        """An inline button pressed: ``hw:<id>:<choice>`` decides an approval when the
        presser is one of its approvers on this chat (at an own bot: an approval of its
        account's only); the press is always answered (or the person's app keeps its
        spinner), and a recorded or closed one edits the message to show it."""
        side = side or self._shared_side()
        data = str(query.get("data") or "")
        user = str((query.get("from") or {}).get("id") or "")
        message = query.get("message") or {}
        prefix, _, rest = data.partition(":")
        interaction_id, _, choice = rest.rpartition(":")
        query_id = str(query["id"])
        if prefix != "hw" or choice not in CHOICES or not interaction_id:
            self.spawn(self._answer(side, query_id, "This button is not one of this service's."))
            return "ignored"
        position = None
        if side.account_id is None or await self._owns(side, interaction_id):
            position = await self.inbound.button_approver("telegram", interaction_id, user)
        if position is None:
            self.spawn(self._answer(side, query_id, "This approval is not yours to decide."))
            return "refused"
        result, text = await self.inbound.decide_by_button(
            "telegram", interaction_id, position, user, choice
        )
        shown = {
            "recorded": "Recorded: " + ("approved." if choice == "approve" else "rejected."),
            "already": "You decided this approval already.",
            "closed": f"This approval is closed: {text}",
        }.get(result, text)
        self.spawn(self._answer(side, query_id, shown[:200]))
        if result in ("recorded", "closed") and message.get("message_id"):
            original = str(message.get("text") or "")
            outcome = (
                f"{'✅ Approved' if choice == 'approve' else '❌ Rejected'} by you"
                if result == "recorded"
                else f"🔒 {text}"
            )
            self.spawn(
                self._edit(
                    side,
                    int(message["chat"]["id"]),
                    int(message["message_id"]),
                    original,
                    outcome,
                )
            )
        return result

    async def _owns(self, side: BotSide, interaction_id: str) -> bool:
        record = await self.inbound.interaction(interaction_id)
        return record is not None and record.account_id == side.account_id

    async def _answer(self, side: BotSide, query_id: str, text: str) -> None:
        from telegram.error import TelegramError

        try:
            await side.bot.answer_callback_query(query_id, text=text)
        except TelegramError as exc:
            logger.warning("Telegram answerCallbackQuery failed: %s", exc)

    async def _edit(
        self, side: BotSide, chat_id: int, message_id: int, original: str, outcome: str
    ) -> None:
        from telegram.error import TelegramError

        text = f"{original}\n\n{outcome}" if original else outcome
        if len(text) > TEXT_LIMIT:
            text = f"{original[: TEXT_LIMIT - len(outcome) - 3]}…\n\n{outcome}"
        try:
            # No reply_markup: the keyboard goes, so nobody presses it again.
            await side.bot.edit_message_text(chat_id=chat_id, message_id=message_id, text=text)
        except TelegramError as exc:
            logger.warning("Telegram editMessageText of %s/%s failed: %s", chat_id, message_id, exc)

    # -- routes --------------------------------------------------------------------
    def routes(self) -> list[BaseRoute]:
        from .routes import telegram_routes

        return list(telegram_routes(self))
