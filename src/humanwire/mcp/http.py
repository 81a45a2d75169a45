"""The service's ``/mcp`` endpoint: the MCP server over streamable HTTP, per account.

Every request needs the account's bearer key (``Authorization: Bearer <API_KEY>``);
without a valid one it is answered 401 in the service's error body
(``{"error": {"code": "unauthorized", ...}}``) before the MCP SDK sees it. A tool call
runs on a client of that account: the core client (``AsyncHumanWire``) talking to this
same service at its public address, like any other client, so a held wait, a closed
request and a late answer behave exactly as they do for any client.

Recipients come from the request headers the MCP client is configured with
(``Humanwire-Sms-To``, ``Humanwire-WhatsApp-To``, ``Humanwire-Slack-To``,
``Humanwire-Email-To``, …), else, in
local mode, the inbox's default human; the person tools ask the person of the account's
people directory that ``Humanwire-Person`` names (``per_…``: without it, a tool error).
Waits, the client limit, channel cards and the fixed form come from the service's
environment (``HUMANWIRE_MCP_*``, as for ``humanwire mcp``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from humanwire._tool_kinds import check_person
from humanwire.approval import default_recipient

from .server import build_server
from .settings import CHANNELS, McpSettings
from .tools import PERSON

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire
    from humanwire.server.config import ServiceConfig
    from humanwire.server.engine import Engine

__all__ = ["PERSON_HEADER", "RECIPIENT_HEADERS", "AccountSource", "McpEndpoint"]

RECIPIENT_HEADERS: dict[str, str] = {
    "sms": "Humanwire-Sms-To",
    "whatsapp": "Humanwire-WhatsApp-To",
    "slack": "Humanwire-Slack-To",
    "email": "Humanwire-Email-To",
    "telegram": "Humanwire-Telegram-To",
    "teams": "Humanwire-Teams-To",
    "discord": "Humanwire-Discord-To",
}
"""The request header naming each channel's recipient on ``/mcp``."""
PERSON_HEADER = "Humanwire-Person"
"""The request header naming the person of the people directory the person tools ask."""

_MAX_CLIENTS = 256
_MAX_SESSIONS = 20_000
"""Twice the SDK's default cap on open sessions."""
_SESSION_HEADER = "mcp-session-id"


def _bearer(headers: Mapping[str, str] | None) -> str:
    header = (headers or {}).get("authorization", "")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        # The gate lets no such request through; this is the tool's own guard.
        raise ToolError("humanwire: this request carries no API key")
    return token.strip()


def _person(ctx: Context) -> str:
    """The person the request's ``Humanwire-Person`` names (``per_…``)."""
    given = ((ctx.headers or {}).get(PERSON_HEADER.lower()) or "").strip()
    if not given:
        raise ToolError(
            f"humanwire: no person: configure the MCP client to send the header {PERSON_HEADER} "
            "(a person of the account's people directory, per_…)"
        )
    try:
        return check_person(given, name=PERSON_HEADER)
    except ValueError as exc:
        raise ToolError(f"humanwire: {exc}") from None


class AccountSource:
    """A client per account key (the key the gate checked), on this service."""

    def __init__(self, config: ServiceConfig, settings: McpSettings) -> None:
        self.config = config
        self.settings = settings
        self._clients: OrderedDict[str, AsyncHumanWire] = OrderedDict()

    async def client(self, ctx: Context) -> AsyncHumanWire:
        from humanwire._client import AsyncHumanWire

        key = _bearer(ctx.headers)
        client = self._clients.pop(key, None)
        if client is None:
            # One held request per wait: closing it (a cancelled tool call) lets go.
            client = AsyncHumanWire(
                api_key=key, base_url=self.config.public_url, multiplex_waits=False
            )
        self._clients[key] = client
        while len(self._clients) > _MAX_CLIENTS:
            _key, oldest = self._clients.popitem(last=False)
            await oldest.aclose()
        return client

    def recipient(self, ctx: Context, channel: str, to: str | None) -> str:
        if channel == PERSON:
            return _person(ctx)
        if to and self.settings.expose_recipients:
            return to
        header = RECIPIENT_HEADERS[channel]
        given = (ctx.headers or {}).get(header.lower())
        if given:
            return given.strip()
        if self.config.local_mode:
            return default_recipient(channel)
        raise ToolError(
            f"humanwire: no {channel} recipient: configure the MCP client to send the "
            f"header {header}"
        )

    async def aclose(self) -> None:
        while self._clients:
            _key, client = self._clients.popitem()
            with contextlib.suppress(Exception):
                await client.aclose()


class _BearerGate:
    """Refuses a request without the account's key (401, the service's error body), and
    a request naming another account's MCP session (404, as an unknown session)."""

    def __init__(self, app: StreamableHTTPASGIApp, engine: Engine) -> None:
        self.app = app
        self.engine = engine
        self._sessions: OrderedDict[str, str] = OrderedDict()
        """MCP session id → the account that opened it (the newest kept)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from humanwire.server.errors import NotFound, ServiceError
        from humanwire.server.http.errors import service_error_response
        from humanwire.server.routes import authenticate

        request = Request(scope)
        try:
            account = await authenticate(request, self.engine)
            session = request.headers.get(_SESSION_HEADER)
            if session is not None and self._sessions.get(session, account.id) != account.id:
                raise NotFound("no such MCP session")
        except ServiceError as exc:
            await service_error_response(exc)(scope, receive, send)
            return

        async def remember_session(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == _SESSION_HEADER.encode():
                        self._remember(value.decode("latin-1"), account.id)
            await send(message)

        await self.app(scope, receive, remember_session)

    def _remember(self, session: str, account_id: str) -> None:
        self._sessions[session] = account_id
        self._sessions.move_to_end(session)
        while len(self._sessions) > _MAX_SESSIONS:
            self._sessions.popitem(last=False)


class McpEndpoint:
    """``/mcp`` on the service: its route, and its lifespan (``running()``)."""

    def __init__(
        self, config: ServiceConfig, engine: Engine, env: Mapping[str, str] | None = None
    ) -> None:
        settings = McpSettings.from_env(os.environ if env is None else env)
        # Recipients are per account (headers), never the service's own variables.
        self.settings = dataclasses.replace(
            settings,
            sms_to=None,
            whatsapp_to=None,
            slack_to=None,
            telegram_to=None,
            teams_to=None,
            discord_to=None,
            person=None,
        )
        self.source = AccountSource(config, self.settings)
        # Every channel and the person tools: the request's headers name whom they reach.
        server = build_server(self.settings, self.source, (*CHANNELS, PERSON))
        # Every request carries the account's key, which a rebinding page cannot read:
        # the service answers on whatever host name it is reached at.
        server.streamable_http_app(
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._manager = server.session_manager
        self.route = Route("/mcp", _BearerGate(StreamableHTTPASGIApp(self._manager), engine))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK's session manager, for the app's lifespan. It runs in a task of its
        own: its task group is entered and left in one task, even when whoever runs the
        lifespan starts and stops it from different tasks."""
        started, stop = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            async with self._manager.run():
                started.set()
                await stop.wait()

        task = asyncio.ensure_future(run())
        ready = asyncio.ensure_future(started.wait())
        await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            ready.cancel()
            task.result()  # the manager failed to start: raise why
        try:
            yield
        finally:
            stop.set()
            await task
            await self.source.aclose()
