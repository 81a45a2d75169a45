"""``TwilioFakeServer``: ``FakeTwilio`` served over loopback HTTP (``_fake_server``), so
the code under test reaches it as it would reach api.twilio.com (``twilio.api_base``).

The socket is bound before the thread starts (``port=0``: a free port), so
``base_url`` is known at once; ``start`` returns once uvicorn accepts connections and
the fake is bound to the server's loop (its callbacks run there).
"""

from __future__ import annotations

from .._fake_server import FakeServer
from .fake import FakeTwilio

__all__ = ["TwilioFakeServer"]


class TwilioFakeServer(FakeServer[FakeTwilio]):
    """``with TwilioFakeServer(fake) as twilio:`` — ``twilio.base_url`` is what
    ``twilio.api_base`` (or ``Client.api.base_url``) should be."""

    label = "fake Twilio"

    def __init__(
        self, fake: FakeTwilio | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(fake or FakeTwilio(), host, port)
