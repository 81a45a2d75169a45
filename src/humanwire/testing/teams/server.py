"""``TeamsFakeServer``: ``FakeTeams`` served over loopback HTTP (``_fake_server``): the
service URL, the token endpoint and the Bot Framework's key set on one port."""

from __future__ import annotations

from .._fake_server import FakeServer
from .fake import FakeTeams
from .responses import JWKS_PATH, REGION, token_path

__all__ = ["TeamsFakeServer", "teams_fake"]


class TeamsFakeServer(FakeServer[FakeTeams]):
    """``with TeamsFakeServer() as teams:`` — ``teams.token_url`` and ``teams.jwks_url``
    are what Microsoft's would be; activities carry ``teams.fake.service_url``."""

    label = "fake Teams"

    def __init__(
        self, fake: FakeTeams | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(fake or FakeTeams(), host, port)

    def started(self) -> None:
        self.fake.state.service_url = f"{self.base_url}{REGION}/"

    @property
    def token_url(self) -> str:
        return self.base_url + token_path(self.fake.tenant_id)

    @property
    def jwks_url(self) -> str:
        return self.base_url + JWKS_PATH


def teams_fake(fake: FakeTeams | None = None) -> TeamsFakeServer:
    """A fake Teams to serve: ``with teams_fake() as teams: ...``."""
    return TeamsFakeServer(fake)
