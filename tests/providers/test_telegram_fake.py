"""The Telegram contract fake, driven by python-telegram-bot (the SDK the service uses):
what the description allows passes, what it refuses (in its types or in its prose) is a
violation answered as Telegram answers it, the world's rules hold (a bot cannot write
first), and updates reach the webhook with the secret header, retried until answered."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import pytest

telegram = pytest.importorskip("telegram")

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup  # noqa: E402
from telegram.error import BadRequest, Forbidden, InvalidToken  # noqa: E402

from humanwire.testing.telegram import FakeTelegram, TelegramFakeServer, load_spec  # noqa: E402


@pytest.fixture
def served() -> Iterator[TelegramFakeServer]:
    with TelegramFakeServer(FakeTelegram(retry_delays=(0.05, 0.05))) as server:
        yield server


def _bot(server: TelegramFakeServer, token: str | None = None) -> Bot:
    return Bot(token or server.fake.token, base_url=f"{server.api_base}/bot")


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_what_the_sdk_sends_for_an_ask_and_its_outcome_passes(
    served: TelegramFakeServer,
) -> None:
    fake = served.fake
    ada = fake.add_person("Ada")

    async def script() -> None:
        async with _bot(served) as bot:  # getMe first
            keyboard = InlineKeyboardMarkup(
                [[InlineKeyboardButton("Approve", callback_data="hw:apr_1:approve")]]
            )
            sent = await bot.send_message(chat_id=ada, text="Deploy?", reply_markup=keyboard)
            assert sent.message_id > 0 and sent.chat.id == ada
            await bot.edit_message_text(chat_id=ada, message_id=sent.message_id, text="Approved")
            await bot.set_webhook("http://127.0.0.1:9/hook", secret_token="s3cret_-Ok")

    _run(script())
    [message] = fake.sent_to(ada)
    assert message.text == "Approved" and message.edits == ["Deploy?"]
    assert message.reply_markup is None  # an edit without reply_markup removes the keyboard
    assert fake.secret_token == "s3cret_-Ok"
    assert [name for name, _ in fake.requests][:2] == ["getMe", "sendMessage"]
    assert fake.violations == [] and fake.errors == []


@pytest.mark.parametrize(
    ("call", "why"),
    [
        (lambda bot, chat: bot.send_message(chat_id=chat, text="x" * 4097), "1-4096 characters"),
        (
            lambda bot, chat: bot.send_message(
                chat_id=chat,
                text="hi",
                reply_markup=InlineKeyboardMarkup(
                    [[InlineKeyboardButton("A", callback_data="x" * 65)]]
                ),
            ),
            "1-64 bytes",
        ),
        (
            lambda bot, chat: bot.send_message(
                chat_id=chat,
                text="hi",
                reply_markup=InlineKeyboardMarkup(
                    [[InlineKeyboardButton("A", callback_data="é" * 33)]]  # 66 bytes
                ),
            ),
            "1-64 bytes",
        ),
        (lambda bot, chat: bot.set_webhook("http://x", secret_token="no spaces"), "A-Z"),
        (lambda bot, chat: bot.answer_callback_query("1", text="x" * 201), "0-200"),
    ],
)
def test_what_the_description_refuses_in_prose_is_a_violation(
    served: TelegramFakeServer, call: Any, why: str
) -> None:
    fake = served.fake
    ada = fake.add_person()

    async def script() -> None:
        async with _bot(served) as bot:
            with pytest.raises(BadRequest):
                await call(bot, ada)

    _run(script())
    assert len(fake.violations) == 1 and why in fake.violations[0].description


def test_unknown_parameters_and_wrong_types_are_violations(served: TelegramFakeServer) -> None:
    fake = served.fake
    import httpx

    url = f"{served.api_base}/bot{fake.token}/sendMessage"
    assert httpx.post(url, json={"chat_id": 1, "text": "a", "colour": "red"}).status_code == 400
    assert httpx.post(url, json={"chat_id": 1, "text": 5}).status_code == 400
    assert httpx.post(url, json={"text": "a"}).status_code == 400
    markup = {"inline_keyboard": [[{"text": "A", "callback_data": "a", "bogus": 1}]]}
    assert (
        httpx.post(url, data={"chat_id": "1", "text": "a", "reply_markup": json.dumps(markup)})
    ).status_code == 400
    assert len(fake.violations) == 4


def test_the_worlds_rules_are_answered_but_not_violations(served: TelegramFakeServer) -> None:
    fake = served.fake
    shy = fake.add_person("Shy", started=False)

    async def script() -> None:
        async with _bot(served) as bot:
            with pytest.raises(Forbidden, match="can't initiate"):
                await bot.send_message(chat_id=shy, text="hello")
            with pytest.raises(BadRequest, match=r"(?i)chat not found"):
                await bot.send_message(chat_id=424242, text="hello")
            with pytest.raises(BadRequest, match=r"(?i)query is too old"):
                await bot.answer_callback_query("999")
        with pytest.raises(InvalidToken):
            async with _bot(served, "1:wrong") as bot:
                pass

    _run(script())
    assert fake.violations == []


class _Hook(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str | None, dict[str, Any]]]] = []
    statuses: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.headers.get("X-Telegram-Bot-Api-Secret-Token"), body))
        status = self.statuses.pop(0) if self.statuses else 200
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_updates_go_to_the_webhook_with_the_secret_and_are_retried(
    served: TelegramFakeServer,
) -> None:
    fake = served.fake
    hook = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    _Hook.seen, _Hook.statuses = [], [500]
    try:
        ada = fake.add_person("Ada", started=False)

        async def script() -> None:
            async with _bot(served) as bot:
                await bot.set_webhook(
                    f"http://127.0.0.1:{hook.server_address[1]}/", secret_token="tok"
                )

        _run(script())
        fake.start(ada, "bind_abc")
        fake.wait_idle()
        assert [secret for secret, _ in _Hook.seen] == ["tok", "tok"]  # retried after the 500
        update = _Hook.seen[0][1]
        assert (
            update["message"]["text"] == "/start bind_abc"
            and update["message"]["chat"]["id"] == ada
        )
        assert fake.deliveries[0].statuses == [500, 200]
        assert fake.errors == []
    finally:
        hook.shutdown()


def test_the_spec_is_the_published_subset() -> None:
    spec = load_spec()
    assert {"getMe", "sendMessage", "editMessageText", "answerCallbackQuery", "setWebhook"} <= set(
        spec.methods
    )
    assert spec.check_object("InlineKeyboardButton", {"text": "A", "callback_data": "x" * 64}) == []
    assert spec.check_object("InlineKeyboardButton", {"text": "A", "callback_data": "x" * 65})


def test_several_bots_each_have_their_chats_webhook_and_start(
    served: TelegramFakeServer,
) -> None:
    fake = served.fake
    own = fake.add_bot("acme_bot")
    assert own.token != fake.token and own.bot_id != fake.bot_id
    ada = fake.add_person("Ada", started=False)

    async def script() -> None:
        async with _bot(served, own.token) as bot:
            assert (bot.bot.id, bot.bot.username) == (own.bot_id, "acme_bot")
            with pytest.raises(Forbidden):  # Ada started neither bot
                await bot.send_message(chat_id=ada, text="Hi")
            fake.start(ada, bot=own)  # she presses Start in the own bot's chat only
            first = await bot.send_message(chat_id=ada, text="From acme")
            assert first.message_id == 2  # her /start was the chat's message 1
            await bot.set_webhook("http://127.0.0.1:9/own", secret_token="own_secret")
        async with _bot(served) as shared:
            with pytest.raises(Forbidden):  # the shared bot's chat was never started
                await shared.send_message(chat_id=ada, text="From the shared bot")
        fake.revoke_bot(own)
        with pytest.raises(InvalidToken):
            async with _bot(served, own.token):
                pass

    _run(script())
    assert [m.text for m in fake.sent_to(ada, bot=own)] == ["From acme"]
    assert fake.sent_to(ada) == []
    assert (own.webhook_url, own.secret_token) == ("http://127.0.0.1:9/own", "own_secret")
    assert fake.webhook_url == "" and fake.secret_token is None
    assert fake.violations == []
