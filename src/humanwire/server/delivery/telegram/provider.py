"""``TelegramProvider``: the telegram channel through a real Telegram bot
(python-telegram-bot, the ``telegram`` extra; docs/going-live/telegram.md).

- **Sends**: from the shared bot (``telegram.bot_token``) to a chat id with
  ``sendMessage``; ``deliveryStatus`` is ``sent`` once Telegram answers. A bot cannot
  write first: a chat that never pressed Start is 400 ``invalid_to_number`` naming
  ``to``, as is a chat Telegram does not know. The interaction's provider ref is
  ``<chat id>:<message id>``, which is how a reply or a button click finds it again.
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
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute

from ...background.work import BackgroundWork
from ..base import Credentials, Outbound, ProviderFailure, RecipientUnreachable, Sent

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


def message_ref(chat_id: int | str, message_id: int | str) -> str:
    """A sent message's id: Telegram's message ids are unique only within a chat."""
    return f"{chat_id}:{message_id}"


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
        from telegram import Bot
        from telegram.request import HTTPXRequest

        self.config = config
        self.inbound = inbound
        self.public_url = public_url.rstrip("/")
        base = f"{config.api_base.rstrip('/')}/bot"
        self.bot: Bot = Bot(
            config.bot_token,
            base_url=base,
            request=HTTPXRequest(connect_timeout=5.0, read_timeout=10.0),
        )
        self.bot_id = ""
        self.username = ""
        self.credentials = Credentials()
        self.background = BackgroundWork("the Telegram provider")

    # -- identity ------------------------------------------------------------------
    @property
    def senders(self) -> Mapping[str, str]:
        return {"telegram": self.bot_id}

    def start_link(self, token: str) -> str | None:
        """``StartLinks``: None until ``getMe`` told the bot's name."""
        return f"https://t.me/{self.username}?start={token}" if self.username else None

    @property
    def webhook_url(self) -> str:
        return f"{self.public_url}{ROUTE_PREFIX}/updates"

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

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Work that goes on after Telegram's request was answered."""
        self.background.spawn(work)

    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        return sender == self.bot_id

    async def hang_up(self, ref: str) -> None:
        """Telegram carries no calls."""

    # -- sends ---------------------------------------------------------------------
    async def deliver(self, item: Outbound) -> Sent:
        from telegram.error import BadRequest, Forbidden, RetryAfter, TelegramError

        if not self.bot_id:
            try:
                await self._identify()
            except TelegramError as exc:
                raise ProviderFailure(f"Telegram refused the bot's getMe ({exc})") from None
        text = item.text if len(item.text) <= TEXT_LIMIT else item.text[: TEXT_LIMIT - 1] + "…"
        try:
            sent = await self.bot.send_message(
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
        return Sent(ref=message_ref(sent.chat.id, sent.message_id), status="sent")

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
    async def first_delivery(self, update_id: int) -> bool:
        """False for an update seen before (Telegram's retries): answered and dropped."""
        store = self.inbound.state
        now = time.time()
        if not await store.claim_provider_state(UPDATE_SCOPE, str(update_id), {"at": now}, now):
            return False
        await store.delete_provider_state_before(UPDATE_SCOPE, now - UPDATE_TTL)
        return True

    async def _posted(self, chat_id: int, message_id: int) -> InteractionRecord | None:
        """The interaction whose message ``message_id`` is. A reply can overtake
        Telegram's answer to ``sendMessage`` (the ref is stored once it arrives), so a miss
        is looked up again for a few seconds."""
        ref = message_ref(chat_id, message_id)
        deadline = time.monotonic() + REF_WAIT
        while True:
            record = await self.inbound.interaction_by_ref(ref)
            if record is not None or time.monotonic() >= deadline:
                return record
            await asyncio.sleep(0.05)

    async def on_update(self, update: Mapping[str, Any]) -> str:
        """An update of the shape ``routes.update_shape`` checked; returns what became of
        it, for the log and the tests."""
        if "callback_query" in update:
            return await self.on_click(update["callback_query"])
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
            return await self.on_start(message, chat_id, payload)
        from ..port import InboundText

        record = None
        replied = message.get("reply_to_message")
        if isinstance(replied, Mapping) and (replied.get("from") or {}).get("id") == int(
            self.bot_id or 0
        ):
            record = await self._posted(chat_id, int(replied["message_id"]))
        stored = await self.inbound.receive_text(
            InboundText(
                channel="telegram",
                from_addr=str(chat_id),
                to_addr=self.bot_id,
                body=text,
                thread=record.id if record is not None else None,
                ref=f"telegram:{self.bot_id}:{message_ref(chat_id, message['message_id'])}",
            ),
            # A reply to one of our messages is that account's; any other message in the
            # chat is the shared bot's, whose it is the engine settles (shared senders).
            account_id=record.account_id if record is not None else None,
        )
        if stored is None:
            return "duplicate or nobody's"
        return "matched" if stored.interaction_id else "unsolicited"

    async def on_start(self, message: Mapping[str, Any], chat_id: int, token: str) -> str:
        """A start link opened (``/start <token>``): binds the chat to the person the
        token was given for (the people directory's), and tells the chat the outcome."""
        if (message.get("chat") or {}).get("type", "private") != "private":
            # A group's chat is nobody's own address: nothing is spent.
            self.spawn(self._say(chat_id, "Open the link in your private chat with the bot."))
            return "refused"
        binding = await self.inbound.bind_chat("telegram", token, str(chat_id))
        self.spawn(self._say(chat_id, binding.text))
        return "bound" if binding.bound else "refused"

    async def _say(self, chat_id: int, text: str) -> None:
        from telegram.error import TelegramError

        try:
            await self.bot.send_message(chat_id=chat_id, text=text)
        except TelegramError as exc:
            logger.warning("Telegram sendMessage to %s failed: %s", chat_id, exc)

    async def on_click(self, query: Mapping[str, Any]) -> str:
        """An inline button pressed: ``hw:<id>:<choice>`` decides an approval when the
        presser is one of its approvers on this chat; the press is always answered (or
        the person's app keeps its spinner), and a recorded or closed one edits the
        message to show it."""
        data = str(query.get("data") or "")
        user = str((query.get("from") or {}).get("id") or "")
        message = query.get("message") or {}
        prefix, _, rest = data.partition(":")
        interaction_id, _, choice = rest.rpartition(":")
        if prefix != "hw" or choice not in CHOICES or not interaction_id:
            self.spawn(self._answer(str(query["id"]), "This button is not one of this service's."))
            return "ignored"
        position = await self.inbound.button_approver("telegram", interaction_id, user)
        if position is None:
            self.spawn(self._answer(str(query["id"]), "This approval is not yours to decide."))
            return "refused"
        result, text = await self.inbound.decide_by_button(
            "telegram", interaction_id, position, user, choice
        )
        shown = {
            "recorded": "Recorded: " + ("approved." if choice == "approve" else "rejected."),
            "already": "You decided this approval already.",
            "closed": f"This approval is closed: {text}",
        }.get(result, text)
        self.spawn(self._answer(str(query["id"]), shown[:200]))
        if result in ("recorded", "closed") and message.get("message_id"):
            original = str(message.get("text") or "")
            outcome = (
                f"{'✅ Approved' if choice == 'approve' else '❌ Rejected'} by you"
                if result == "recorded"
                else f"🔒 {text}"
            )
            self.spawn(
                self._edit(
                    int(message["chat"]["id"]), int(message["message_id"]), original, outcome
                )
            )
        return result

    async def _answer(self, query_id: str, text: str) -> None:
        from telegram.error import TelegramError

        try:
            await self.bot.answer_callback_query(query_id, text=text)
        except TelegramError as exc:
            logger.warning("Telegram answerCallbackQuery failed: %s", exc)

    async def _edit(self, chat_id: int, message_id: int, original: str, outcome: str) -> None:
        from telegram.error import TelegramError

        text = f"{original}\n\n{outcome}" if original else outcome
        if len(text) > TEXT_LIMIT:
            text = f"{original[: TEXT_LIMIT - len(outcome) - 3]}…\n\n{outcome}"
        try:
            # No reply_markup: the keyboard goes, so nobody presses it again.
            await self.bot.edit_message_text(chat_id=chat_id, message_id=message_id, text=text)
        except TelegramError as exc:
            logger.warning("Telegram editMessageText of %s/%s failed: %s", chat_id, message_id, exc)

    # -- routes --------------------------------------------------------------------
    def routes(self) -> list[BaseRoute]:
        from .routes import telegram_routes

        return list(telegram_routes(self))
