"""A humanwire service wired to the Telegram contract fake, both on loopback: the service
calls the fake's Bot API as it would api.telegram.org (and points the bot's webhook at
itself at start), the fake sends the people's messages and button presses as updates
with the webhook's secret, and the test plays the people."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from humanwire.server.config import TelegramConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from humanwire.testing.telegram import FakeTelegram, FakeTelegramMessage, TelegramFakeServer

__all__ = ["SECRET", "TelegramLive", "fake_telegram", "telegram_live"]

SECRET = "tg-webhook-secret_0123"


@dataclass
class TelegramLive:
    fake: FakeTelegram
    server: TelegramFakeServer
    runner: ServiceRunner
    http: httpx.Client
    ada: int
    """A person who started a chat with the bot."""

    @property
    def base_url(self) -> str:
        return self.runner.base_url

    def account(self, name: str) -> httpx.Client:
        key = self.runner.create_account(name)
        return httpx.Client(
            base_url=self.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        )

    def sent(self, chat: int, count: int = 1, timeout: float = 10) -> FakeTelegramMessage:
        """The ``count``-th message the bot sent to ``chat``."""
        self.fake.wait_for(lambda: len(self.fake.sent_to(chat)) >= count, timeout=timeout)
        return self.fake.sent_to(chat)[count - 1]

    def ask(self, http: httpx.Client | None = None, **body: Any) -> httpx.Response:
        return (http or self.http).post("/messages/telegram", json={"to": str(self.ada), **body})


@pytest.fixture
def fake_telegram() -> Iterator[TelegramFakeServer]:
    with TelegramFakeServer(FakeTelegram(retry_delays=(0.1, 0.3))) as server:
        yield server


@pytest.fixture
def telegram_live(database: str, fake_telegram: TelegramFakeServer) -> Iterator[TelegramLive]:
    """The service wired to the fake, on each store in turn."""
    fake = fake_telegram.fake
    ada = fake.add_person("Ada")
    telegram = TelegramConfig(
        bot_token=fake.token, webhook_secret=SECRET, api_base=fake_telegram.api_base
    )
    runner = ServiceRunner(replace(fast_config(database), telegram=telegram))
    runner.start()
    key = runner.create_account("tester")
    http = httpx.Client(
        base_url=runner.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    try:
        yield TelegramLive(fake, fake_telegram, runner, http, ada)
    finally:
        http.close()
        runner.stop()
