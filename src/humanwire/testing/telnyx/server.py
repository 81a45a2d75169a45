"""``TelnyxFakeServer``: ``FakeTelnyx`` served over loopback HTTP (``_fake_server``), so
the code under test reaches it as it would reach api.telnyx.com (``telnyx.api_base`` =
``server.api_base``)."""

from __future__ import annotations

from .._fake_server import FakeServer
from .fake import FakeTelnyx

__all__ = ["TelnyxFakeServer"]


class TelnyxFakeServer(FakeServer[FakeTelnyx]):
    label = "fake Telnyx"

    def __init__(
        self, fake: FakeTelnyx | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(fake or FakeTelnyx(), host, port)

    @property
    def api_base(self) -> str:
        """What ``telnyx.api_base`` (or ``Telnyx(base_url=...)``) should be."""
        return f"{self.base_url}/v2"
