"""``FakeTelegram``: Telegram's side, played locally — bots and the people who chat
with them, state and rules in one object, apart from the HTTP serving
(``server.TelegramFakeServer``), moto-style.

**Bots.** The fake starts with one bot (``token``, ``bot_id``, ``username``: the shared
bot a deployment configures); ``add_bot`` makes more (``FakeBot``: an account's own bot),
each with its own token, webhook and secret, its own chats' message ids (Telegram numbers
a private chat's messages per bot) and its own Start: a person who pressed Start in one
bot's chat cannot be written to by another. ``revoke_bot`` makes a token refused (401
"Unauthorized" on every method, ``getMe`` too), as Telegram does once @BotFather revokes it.

**The Bot API** (``/bot<token>/<method>``, GET or POST; parameters from the query, a form
body, whose objects travel as JSON text, or a JSON body). Every request is checked
against the published description (``spec``: a method it lists, parameters it declares,
required ones present, each of a declared type, objects held to their types) and against
what the description says only in prose (``callback_data`` 1–64 bytes, text 1–4096
characters, a callback answer's text ≤ 200, ``secret_token``'s alphabet). Malformed
requests are answered as Telegram does (``{"ok": false, "error_code": 400,
"description": "Bad Request: …"}``) and recorded in ``violations`` (a test asserts the
service never sent one); answers about the world (a chat that never started the bot is
403 "bot can't initiate conversation with a user", an unknown chat 400 "chat not found",
a wrong token 401, an edit that changes nothing 400 "message is not modified") are
answered the same way but are not violations.

Methods played: ``getMe``, ``sendMessage``, ``editMessageText``,
``editMessageReplyMarkup``, ``answerCallbackQuery``, ``setWebhook``, ``deleteWebhook``,
``getWebhookInfo``. An edit without ``reply_markup`` removes the keyboard (what Telegram
is reported to do).

**The people's side.** ``start`` (``/start`` with an optional deep-link payload),
``send`` (a message, optionally a reply to one of the bot's) and ``click`` (an inline
button of a bot's message: a ``callback_query``) each make the update Telegram would and
POST it to the webhook ``setWebhook`` gave, with ``X-Telegram-Bot-Api-Secret-Token``; an
update not answered 2xx is retried (``retry_delays``), as Telegram does. Every update
and answer the fake makes is held to the description too (``errors``).

Deliveries run on the serving loop with ``httpx.AsyncClient``; the test-facing methods
are thread-safe and return once the change is made (``wait_idle`` for the deliveries).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._fake_server import FakeBackground, poll_until
from .spec import BotApiSpec, SpecViolation, load_spec

__all__ = [
    "FakeBot",
    "FakeTelegram",
    "FakeTelegramChat",
    "FakeTelegramMessage",
    "FakeUpdateDelivery",
    "Violation",
]

T = TypeVar("T")
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
RETRY_DELAYS = (0.2, 0.5, 1.0)
"""Seconds between attempts of an update not answered 2xx (Telegram's are longer)."""
CANNOT_INITIATE = "Forbidden: bot can't initiate conversation with a user"


@dataclass
class FakeBot:
    """One bot: its token, its webhook (``setWebhook``'s url and secret) and its name."""

    bot_id: int
    token: str
    username: str
    webhook_url: str = ""
    secret_token: str | None = None
    revoked: bool = False
    """Its token was revoked: every method answers 401."""

    def user(self) -> dict[str, Any]:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": "humanwire",
            "username": self.username,
        }


@dataclass
class FakeTelegramChat:
    """A person and their private chats with the bots (a chat's id is the person's user
    id, whichever the bot)."""

    id: int
    first_name: str
    started: bool = False
    """The person sent ``/start`` to every bot already (``add_person(started=True)``)."""
    started_bots: set[int] = field(default_factory=set)
    """The bots the person pressed Start with (``start``): only those may write."""

    def can_write(self, bot_id: int) -> bool:
        return self.started or bot_id in self.started_bots

    def user(self) -> dict[str, Any]:
        return {"id": self.id, "is_bot": False, "first_name": self.first_name}

    def chat(self) -> dict[str, Any]:
        return {"id": self.id, "type": "private", "first_name": self.first_name}


@dataclass
class FakeTelegramMessage:
    chat_id: int
    message_id: int
    text: str
    from_bot: bool
    date: int
    reply_markup: dict[str, Any] | None = None
    reply_to: int | None = None
    edits: list[str] = field(default_factory=list)
    """The texts it had before each edit."""
    bot_id: int = 0
    """The bot whose chat it is in."""

    @property
    def buttons(self) -> list[dict[str, Any]]:
        rows = (self.reply_markup or {}).get("inline_keyboard") or []
        return [button for row in rows for button in row]


@dataclass
class FakeUpdateDelivery:
    update: dict[str, Any]
    statuses: list[int] = field(default_factory=list)
    """The webhook's answer to each attempt (0: not reached)."""
    bot_id: int = 0
    """The bot whose webhook it went to."""

    @property
    def acknowledged(self) -> bool:
        return any(200 <= status < 300 for status in self.statuses)


@dataclass(frozen=True)
class Violation:
    method: str
    params: dict[str, Any]
    description: str


class _Refused(Exception):
    """An answer about the world (not a malformed request): not a violation."""

    def __init__(self, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.description = description
        self.status = status


class FakeTelegram:
    """Bots (the first: ``token``, ``bot_id``, ``username``; more with ``add_bot``) and the
    people chatting with them. Serve it with ``TelegramFakeServer``."""

    def __init__(
        self,
        *,
        spec: BotApiSpec | None = None,
        username: str = "humanwire_test_bot",
        retry_delays: Sequence[float] = RETRY_DELAYS,
    ) -> None:
        self.spec = spec or load_spec()
        self.retry_delays = tuple(retry_delays)
        self.lock = threading.RLock()
        self.background = FakeBackground(
            "fake Telegram", "TelegramFakeServer", self.lock, self._error
        )
        self.bots: dict[str, FakeBot] = {}
        """Every bot by its token, the first one first."""
        self.bot = self.add_bot(username)
        """The first bot (the shared bot a deployment configures)."""
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.chats: dict[int, FakeTelegramChat] = {}
            self.messages: dict[tuple[int, int, int], FakeTelegramMessage] = {}
            """Every message by (bot id, chat id, message id)."""
            self.requests: list[tuple[str, dict[str, Any]]] = []
            self.calls: list[tuple[int, str, dict[str, Any]]] = []
            """Every Bot API request as (bot id, method, parameters); 0: an unknown token."""
            self.violations: list[Violation] = []
            self.errors: list[str] = []
            self.deliveries: list[FakeUpdateDelivery] = []
            self.callbacks: dict[str, dict[str, Any]] = {}
            """Each ``callback_query`` id sent, with the answer it got (``answered``)."""
            for bot in self.bots.values():
                bot.webhook_url, bot.secret_token = "", None
            self._next_update = 100000 + secrets.randbelow(1000)
            self._next_message: dict[tuple[int, int], int] = {}
            self._next_user = 100000001

    # -- the bots -------------------------------------------------------------------------
    def add_bot(self, username: str | None = None) -> FakeBot:
        """A new bot, as @BotFather makes one: its token is what an account registers."""
        with self.lock:
            bot_id = 7000000000 + secrets.randbelow(10**8)
            while any(bot.bot_id == bot_id for bot in self.bots.values()):
                bot_id += 1
            bot = FakeBot(
                bot_id, f"{bot_id}:{secrets.token_urlsafe(26)}", username or f"own_{bot_id}_bot"
            )
            self.bots[bot.token] = bot
            return bot

    def revoke_bot(self, bot: FakeBot) -> None:
        """@BotFather's revoke: the token is refused from now on (401)."""
        with self.lock:
            bot.revoked = True

    def _bot(self, bot: FakeBot | None) -> FakeBot:
        return bot if bot is not None else self.bot

    def bot_by_id(self, bot_id: int) -> FakeBot:
        with self.lock:
            for bot in self.bots.values():
                if bot.bot_id == bot_id:
                    return bot
        raise ValueError(f"no bot {bot_id}")

    @property
    def token(self) -> str:
        return self.bot.token

    @property
    def bot_id(self) -> int:
        return self.bot.bot_id

    @property
    def username(self) -> str:
        return self.bot.username

    @property
    def webhook_url(self) -> str:
        return self.bot.webhook_url

    @property
    def secret_token(self) -> str | None:
        return self.bot.secret_token

    # -- the people ---------------------------------------------------------------------
    def add_person(self, first_name: str = "Ada", *, started: bool = True) -> int:
        """A person; ``started``: they sent ``/start`` to every bot already (without
        sending the updates), so any bot may write to them."""
        with self.lock:
            chat_id = self._next_user
            self._next_user += 1
            self.chats[chat_id] = FakeTelegramChat(chat_id, first_name, started)
            return chat_id

    def start(
        self, chat_id: int, payload: str | None = None, *, bot: FakeBot | None = None
    ) -> FakeTelegramMessage:
        """The person presses Start in ``bot``'s chat (the first bot's when None: a
        ``t.me/<bot>?start=<payload>`` link)."""
        with self.lock:
            self._chat(chat_id).started_bots.add(self._bot(bot).bot_id)
        return self.send(chat_id, "/start" + (f" {payload}" if payload else ""), bot=bot)

    def send(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: FakeTelegramMessage | None = None,
        bot: FakeBot | None = None,
    ) -> FakeTelegramMessage:
        """The person writes ``text`` in ``bot``'s chat (``reply_to``'s when given, else
        the first bot's), a reply to ``reply_to`` when given; the update goes to that
        bot's webhook."""
        with self.lock:
            if reply_to is not None:
                bot = self.bot_by_id(reply_to.bot_id)
            target = self._bot(bot)
            chat = self._chat(chat_id)
            message = self._add(chat_id, text, from_bot=False, reply_to=reply_to, bot=target)
            body = self._message_object(message, chat)
            if reply_to is not None:
                body["reply_to_message"] = self._message_object(reply_to, chat)
            update = {"update_id": self._update_id(), "message": body}
        self._deliver(update, target)
        return message

    def click(self, message: FakeTelegramMessage, data: str) -> str:
        """The person presses the inline button carrying ``data``; returns the callback
        query's id (``callbacks[id]`` shows how it was answered). The update goes to the
        webhook of the bot whose message it is."""
        with self.lock:
            if data not in [button.get("callback_data") for button in message.buttons]:
                raise ValueError(f"no button {data!r} on message {message.message_id}")
            bot = self.bot_by_id(message.bot_id)
            chat = self._chat(message.chat_id)
            query_id = str(secrets.randbelow(10**18))
            self.callbacks[query_id] = {"answered": False, "bot": bot.bot_id}
            update = {
                "update_id": self._update_id(),
                "callback_query": {
                    "id": query_id,
                    "from": chat.user(),
                    "message": self._message_object(message, chat),
                    "chat_instance": f"{bot.bot_id}:{message.chat_id}",
                    "data": data,
                },
            }
        self._deliver(update, bot)
        return query_id

    def sent_to(self, chat_id: int, *, bot: FakeBot | None = None) -> list[FakeTelegramMessage]:
        """The messages ``bot`` (the first bot when None) sent in the chat, oldest first."""
        with self.lock:
            bot_id = self._bot(bot).bot_id
            return sorted(
                (
                    m
                    for m in self.messages.values()
                    if m.chat_id == chat_id and m.from_bot and m.bot_id == bot_id
                ),
                key=lambda m: m.message_id,
            )

    def wait_for(self, predicate: Callable[[], T], timeout: float = 10.0) -> T:
        return poll_until(predicate, self.lock, timeout, "fake Telegram")

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Returns once every update sent so far was delivered (or given up on)."""
        self.wait_for(lambda: self.background.idle or None, timeout)

    def redeliver(self, delivery: FakeUpdateDelivery) -> FakeUpdateDelivery:
        """Sends an update again, as Telegram does when it saw no answer."""
        return self._deliver(delivery.update, self.bot_by_id(delivery.bot_id))

    def post_update(
        self, url: str, body: bytes, *, secret: str | None = None, content_type: str = ""
    ) -> httpx.Response:
        """A raw POST to ``url`` (``secret``: the header's value; None: no header), for
        tests of what the webhook refuses."""
        headers = {"Content-Type": content_type or "application/json"}
        if secret is not None:
            headers[SECRET_HEADER] = secret
        with httpx.Client(timeout=10) as client:
            return client.post(url, content=body, headers=headers)

    # -- updates to the webhook -----------------------------------------------------------
    def _deliver(self, update: dict[str, Any], bot: FakeBot) -> FakeUpdateDelivery:
        for problem in self.spec.check_object("Update", update):
            self._error(f"update: {problem}")
        delivery = FakeUpdateDelivery(update, bot_id=bot.bot_id)
        with self.lock:
            self.deliveries.append(delivery)
            url, secret = bot.webhook_url, bot.secret_token
        if url:
            self.background.spawn(self._dispatch(delivery, url, secret), "update delivery")
        return delivery

    async def _dispatch(self, delivery: FakeUpdateDelivery, url: str, secret: str | None) -> None:
        body = json.dumps(delivery.update).encode()
        headers = {"Content-Type": "application/json"}
        if secret:
            headers[SECRET_HEADER] = secret
        for attempt in range(len(self.retry_delays) + 1):
            if attempt:
                await asyncio.sleep(self.retry_delays[attempt - 1])
            try:
                response = await self.background.http.post(url, content=body, headers=headers)
                status = response.status_code
            except httpx.HTTPError:
                status = 0
            with self.lock:
                delivery.statuses.append(status)
            if 200 <= status < 300:
                return
        self._error(f"update {delivery.update['update_id']} was never acknowledged")

    def _error(self, problem: str) -> None:
        with self.lock:
            self.errors.append(problem)

    # -- state --------------------------------------------------------------------------
    def _chat(self, chat_id: int) -> FakeTelegramChat:
        try:
            return self.chats[chat_id]
        except KeyError:
            raise ValueError(f"no chat {chat_id} (add_person first)") from None

    def _update_id(self) -> int:
        self._next_update += 1
        return self._next_update

    def _add(
        self,
        chat_id: int,
        text: str,
        *,
        from_bot: bool,
        reply_to: FakeTelegramMessage | None = None,
        reply_markup: dict[str, Any] | None = None,
        bot: FakeBot | None = None,
    ) -> FakeTelegramMessage:
        """A message in ``bot``'s chat (the first bot's when None)."""
        bot = self._bot(bot)
        # A private chat's message ids are its own (per bot and person), from 1.
        number = self._next_message.get((bot.bot_id, chat_id), 1)
        self._next_message[(bot.bot_id, chat_id)] = number + 1
        message = FakeTelegramMessage(
            chat_id=chat_id,
            message_id=number,
            text=text,
            from_bot=from_bot,
            date=int(time.time()),
            reply_markup=reply_markup,
            reply_to=reply_to.message_id if reply_to is not None else None,
            bot_id=bot.bot_id,
        )
        self.messages[(bot.bot_id, chat_id, message.message_id)] = message
        return message

    def _message_object(
        self, message: FakeTelegramMessage, chat: FakeTelegramChat
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "message_id": message.message_id,
            "from": self.bot_by_id(message.bot_id).user() if message.from_bot else chat.user(),
            "date": message.date,
            "chat": chat.chat(),
            "text": message.text,
        }
        if message.edits:
            body["edit_date"] = int(time.time())
        if message.reply_markup:
            body["reply_markup"] = message.reply_markup
        return body

    # -- the Bot API ----------------------------------------------------------------------
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The serving loop (None while not served)."""
        return self.background.loop

    def app(self) -> Starlette:
        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with self.background.serving():
                yield

        return Starlette(
            routes=[Route("/bot{token}/{method}", self._api, methods=["GET", "POST"])],
            lifespan=lifespan,
        )

    async def _api(self, request: Request) -> Response:
        name = request.path_params["method"]
        values: dict[str, Any] = dict(request.query_params)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        raw = await request.body()
        form = content_type != "application/json"
        with self.lock:
            bot = self.bots.get(request.path_params["token"])
        try:
            if raw:
                values.update(_body(raw, content_type))
            with self.lock:
                self.calls.append((bot.bot_id if bot else 0, name, dict(values)))
            if bot is None or bot.revoked:
                raise _Refused("Unauthorized", 401)
            with self.lock:
                self.requests.append((name, dict(values)))
            params = self.spec.check_params(name, values, form=form)
            with self.lock:
                result = self._operate(bot, name, params)
        except SpecViolation as exc:
            with self.lock:
                self.violations.append(Violation(name, values, exc.description))
            return _error(exc.status, exc.description)
        except _Refused as exc:
            return _error(exc.status, exc.description)
        returns = self.spec.method(name).get("returns") or ["True"]
        for problem in self.spec.check_object(returns[0], result, f"{name} result"):
            self._error(problem)
        return JSONResponse({"ok": True, "result": result})

    def _operate(self, bot: FakeBot, name: str, params: dict[str, Any]) -> Any:
        if name == "getMe":
            return {
                **bot.user(),
                "can_join_groups": True,
                "can_read_all_group_messages": False,
                "supports_inline_queries": False,
            }
        if name == "sendMessage":
            return self._send_message(bot, params)
        if name in ("editMessageText", "editMessageReplyMarkup"):
            return self._edit(bot, name, params)
        if name == "answerCallbackQuery":
            query = self.callbacks.get(str(params["callback_query_id"]))
            if query is None or query["answered"] or query.get("bot") != bot.bot_id:
                raise _Refused(
                    "Bad Request: query is too old and response timeout expired or query "
                    "ID is invalid"
                )
            query.update(answered=True, text=params.get("text"), at=time.time())
            return True
        if name == "setWebhook":
            bot.webhook_url = str(params["url"])
            bot.secret_token = params.get("secret_token")
            return True
        if name == "deleteWebhook":
            bot.webhook_url, bot.secret_token = "", None
            return True
        if name == "getWebhookInfo":
            return {
                "url": bot.webhook_url,
                "has_custom_certificate": False,
                "pending_update_count": 0,
            }
        raise _Refused("Not Found", 404)

    def _target(self, chat_id: Any) -> FakeTelegramChat:
        chat = self.chats.get(_int(chat_id))
        if chat is None:
            raise _Refused("Bad Request: chat not found")
        return chat

    def _send_message(self, bot: FakeBot, params: dict[str, Any]) -> dict[str, Any]:
        chat = self._target(params["chat_id"])
        if not chat.can_write(bot.bot_id):
            raise _Refused(CANNOT_INITIATE, 403)
        markup = params.get("reply_markup")
        reply_to = None
        replying = params.get("reply_parameters")
        if isinstance(replying, Mapping):
            reply_to = self.messages.get((bot.bot_id, chat.id, _int(replying.get("message_id"))))
        message = self._add(
            chat.id,
            str(params["text"]),
            from_bot=True,
            reply_to=reply_to,
            reply_markup=markup if isinstance(markup, dict) and markup else None,
            bot=bot,
        )
        return self._message_object(message, chat)

    def _edit(self, bot: FakeBot, name: str, params: dict[str, Any]) -> dict[str, Any]:
        if "chat_id" not in params or "message_id" not in params:
            raise SpecViolation("Bad Request: chat_id and message_id are needed here")
        chat = self._target(params["chat_id"])
        message = self.messages.get((bot.bot_id, chat.id, _int(params["message_id"])))
        if message is None:
            raise _Refused("Bad Request: message to edit not found")
        if not message.from_bot:
            raise _Refused("Bad Request: message can't be edited")
        markup = params.get("reply_markup") or None
        text = str(params["text"]) if name == "editMessageText" else message.text
        if text == message.text and markup == message.reply_markup:
            raise _Refused(
                "Bad Request: message is not modified: specified new message content and "
                "reply markup are exactly the same as a current content and reply markup "
                "of the message"
            )
        if text != message.text:
            message.edits.append(message.text)
        message.text, message.reply_markup = text, markup
        return self._message_object(message, chat)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _body(raw: bytes, content_type: str) -> dict[str, Any]:
    if content_type == "application/json":
        try:
            body = json.loads(raw)
        except ValueError:
            raise SpecViolation("Bad Request: can't parse JSON object") from None
        if not isinstance(body, dict):
            raise SpecViolation("Bad Request: the JSON body is not an object")
        return body
    if content_type in ("application/x-www-form-urlencoded", ""):
        return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
    raise SpecViolation(f"Bad Request: unsupported Content-Type {content_type}")


def _error(status: int, description: str) -> JSONResponse:
    return JSONResponse(
        {"ok": False, "error_code": status, "description": description}, status_code=status
    )
