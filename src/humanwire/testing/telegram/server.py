"""``TelegramFakeServer``: ``FakeTelegram`` served over loopback HTTP (``_fake_server``),
so the service reaches it as it would reach api.telegram.org: ``api_base`` is what
``telegram.api_base`` should be (the methods under ``/bot<token>/``)."""

from __future__ import annotations

from .._fake_server import FakeServer
from .fake import FakeTelegram

__all__ = ["TelegramFakeServer"]


class TelegramFakeServer(FakeServer[FakeTelegram]):
    """``with TelegramFakeServer() as telegram:`` — ``telegram.api_base`` is the Bot API."""

    label = "fake Telegram"

    def __init__(
        self, fake: FakeTelegram | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(fake or FakeTelegram(), host, port)

    @property
    def api_base(self) -> str:
        return self.base_url
