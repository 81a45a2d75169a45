"""``MetaWhatsAppFakeServer``: ``FakeMetaWhatsApp`` served over loopback HTTP
(``_fake_server``): ``api_base`` is what ``https://graph.facebook.com`` would be."""

from __future__ import annotations

from .._fake_server import FakeServer
from .fake import FakeMetaWhatsApp

__all__ = ["MetaWhatsAppFakeServer", "whatsapp_meta_fake"]


class MetaWhatsAppFakeServer(FakeServer[FakeMetaWhatsApp]):
    """``with MetaWhatsAppFakeServer() as meta:`` — ``meta.api_base`` is the Graph base."""

    label = "fake Meta WhatsApp"

    def __init__(
        self, fake: FakeMetaWhatsApp | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(fake or FakeMetaWhatsApp(), host, port)

    @property
    def api_base(self) -> str:
        return self.base_url


def whatsapp_meta_fake(fake: FakeMetaWhatsApp | None = None) -> MetaWhatsAppFakeServer:
    """A fake Cloud API to serve: ``with whatsapp_meta_fake() as meta: ...``."""
    return MetaWhatsAppFakeServer(fake)
