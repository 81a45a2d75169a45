"""``SlackFakeServer``: ``FakeSlack`` served over loopback HTTP (``_fake_server``), so the
service reaches it as it would reach slack.com: ``api_base`` is what ``slack.api_base``
should be (the Web API under ``/api/``, the consent page at ``/oauth/v2/authorize``)."""

from __future__ import annotations

from .._fake_server import FakeServer
from .fake import FakeSlack

__all__ = ["SlackFakeServer"]


class SlackFakeServer(FakeServer[FakeSlack]):
    """``with SlackFakeServer(fake) as slack:`` — ``slack.api_base`` is the Web API."""

    label = "fake Slack"

    def __init__(
        self, fake: FakeSlack | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(fake or FakeSlack(), host, port)

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/api/"

    def started(self) -> None:
        self.fake.base_url = self.base_url
