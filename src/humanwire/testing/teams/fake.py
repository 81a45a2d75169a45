"""``FakeTeams``: the test's handle on a fake Microsoft Teams, its state (``state.py``),
its HTTP face (``responses.py``: the Connector, the token endpoint, the key set) and the
people acting in it (``people.py``), joined."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from starlette.applications import Starlette

from .._fake_server import poll_until
from .certificates import make_certificate
from .people import ActivitySender
from .responses import TeamsResponses
from .spec import load_spec
from .state import FakeActivity, FakeTeamsUser, TeamsState

__all__ = ["FakeTeams"]

T = TypeVar("T")


class FakeTeams:
    """One bot registration (``app_id``, ``app_password``, certificates a test adds with
    ``add_certificate``) in one tenant (``tenant_id``),
    the people of that tenant, and the test's controls.

    Point the code under test at it: the token endpoint and the key set of its server
    (``TeamsFakeServer.token_url``, ``.jwks_url``); the service URL every activity
    carries is ``service_url``. Set ``messaging_endpoint`` to the bot's endpoint.
    """

    def __init__(self) -> None:
        self.spec = load_spec()
        self.state = TeamsState()
        self.responses = TeamsResponses(self.state, self.spec)
        self.sender = ActivitySender(self.state, self.spec)

    # -- what the bot is given ---------------------------------------------------------
    @property
    def app_id(self) -> str:
        return self.state.app_id

    @property
    def app_password(self) -> str:
        return self.state.app_password

    def add_certificate(self, *, days: float = 365) -> tuple[str, str]:
        """A new certificate uploaded to the registration: ``(certificate, private_key)``
        as PEM text, for ``teams.certificate`` / ``teams.private_key``."""
        certificate, key = make_certificate(days=days)
        self.state.certificates.upload(certificate)
        return certificate, key

    def upload_certificate(self, certificate: str) -> None:
        """A certificate (PEM) uploaded to the registration."""
        self.state.certificates.upload(certificate)

    @property
    def clock_skew(self) -> float:
        """Seconds the token endpoint's clock runs ahead (a client assertion's ``exp`` and
        ``nbf`` are read against it)."""
        return self.state.certificates.clock_skew

    @clock_skew.setter
    def clock_skew(self, seconds: float) -> None:
        self.state.certificates.clock_skew = seconds

    @property
    def tenant_id(self) -> str:
        return self.state.tenant_id

    @property
    def bot_id(self) -> str:
        return self.state.bot_id

    @property
    def service_url(self) -> str:
        return self.state.service_url

    @property
    def messaging_endpoint(self) -> str | None:
        return self.sender.messaging_endpoint

    @messaging_endpoint.setter
    def messaging_endpoint(self, url: str | None) -> None:
        self.sender.messaging_endpoint = url

    # -- the world ---------------------------------------------------------------------
    def add_user(self, name: str) -> FakeTeamsUser:
        """A person of the tenant (the bot is not installed for them yet)."""
        user = self.state.add_user(name)
        self.state.personal_conversation(user).installed = False
        return user

    # -- records -----------------------------------------------------------------------
    @property
    def violations(self) -> list[str]:
        with self.state.lock:
            return list(self.state.violations)

    @property
    def errors(self) -> list[str]:
        with self.state.lock:
            return list(self.state.errors)

    def sent_to(self, user: FakeTeamsUser) -> list[FakeActivity]:
        """The bot's activities in ``user``'s personal chat, oldest first."""
        with self.state.lock:
            conversation = self.state.personal_conversation(user)
            return [
                a
                for a in self.state.activities
                if a.conversation_id == conversation.id
                and a.from_id == self.state.bot_id
                and not a.deleted
            ]

    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        return poll_until(predicate, self.state.lock, timeout, "fake Teams")

    # -- what people do ----------------------------------------------------------------
    def install(self, user: FakeTeamsUser) -> httpx.Response:
        return self.sender.install(user)

    def say(self, user: FakeTeamsUser, text: str) -> httpx.Response:
        return self.sender.say(user, text)

    async def asay(self, user: FakeTeamsUser, text: str) -> httpx.Response:
        return await self.sender.asay(user, text)

    def execute(
        self,
        activity: FakeActivity,
        user: FakeTeamsUser,
        verb: str,
        inputs: dict[str, Any] | None = None,
    ) -> httpx.Response:
        return self.sender.execute(activity, user, verb, inputs)

    async def aexecute(
        self,
        activity: FakeActivity,
        user: FakeTeamsUser,
        verb: str,
        inputs: dict[str, Any] | None = None,
    ) -> httpx.Response:
        return await self.sender.aexecute(activity, user, verb, inputs)

    def submit(
        self,
        activity: FakeActivity,
        user: FakeTeamsUser,
        inputs: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """``user`` presses the ``Action.Submit`` of ``activity``'s card."""
        return self.sender.submit(activity, user, inputs)

    def token(self, service_url: str | None = None, **options: Any) -> str:
        return self.sender.token(service_url, **options)

    def post(self, body: bytes, token: str | None) -> httpx.Response:
        return self.sender.post(body, token)

    def app(self) -> Starlette:
        return self.responses.app()
