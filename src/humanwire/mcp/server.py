"""The MCP server: the tools of ``humanwire.mcp.tools`` registered with the MCP SDK's
``MCPServer``, each run on the client and recipients its :class:`ToolSource` gives.

Two sources: :class:`ConfiguredSource` (``humanwire mcp`` over stdio: one client from the
environment, recipients from the settings) and the service's ``/mcp`` endpoint (one
client per account key: ``humanwire.mcp.http``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from pydantic import ValidationError, create_model

from humanwire._tooling import plain_json_schema
from humanwire.approval import MESSAGE_RECIPIENT_ENV, RECIPIENT_ENV, resolve_recipient
from humanwire.errors import HumanWireError

from .gate import ApprovalState, GatedTool, HumanGate, request_state_security, state_key_bytes
from .settings import CHANNELS, McpSettings, SettingsError
from .tasks import HumanTasks
from .tools import CHECK_TOOL, PERSON, McpTool, ToolCall, build_tools

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = ["INSTRUCTIONS", "ConfiguredSource", "ToolSource", "build_server", "invalid_arguments"]

INSTRUCTIONS = (
    "These tools reach a real person (by SMS, WhatsApp, Slack, a web form or a phone call) "
    "and return what they answer. A person may take minutes: when a tool returns an "
    f"interaction id instead of an answer, continue and call {CHECK_TOOL} later rather "
    "than asking again. No answer in time is a normal result, not an error."
)


class ToolSource(Protocol):
    """Where a tool call gets its client and its recipients."""

    async def client(self, ctx: Context) -> AsyncHumanWire: ...

    def recipient(self, ctx: Context, channel: str, to: str | None) -> str: ...


def invalid_arguments(exc: ValidationError) -> str:
    """What the model reads when its arguments do not fit the schema: the field named."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "humanwire: invalid arguments: " + "; ".join(problems)


class _SdkTool(Tool):
    """The SDK's tool, with errors worded for the model: ``humanwire: invalid arguments:
    <field>: <problem>``, or ``humanwire: <the service's error>``."""

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(invalid_arguments(exc)) from None
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, ToolError):
                # Ours, worded for the model: without the SDK's "Error executing tool" prefix.
                raise exc.__cause__ from None
            raise


def _arguments(tool: McpTool) -> type[ArgModelBase]:
    # The shared schema, with the SDK's argument base (how it hands arguments over).
    bases: Any = (tool.schema, ArgModelBase)
    return cast(
        "type[ArgModelBase]", create_model(f"{tool.schema.__name__}Arguments", __base__=bases)
    )


def _sdk_tool(
    tool: McpTool, source: ToolSource, settings: McpSettings, arguments: type[ArgModelBase]
) -> Tool:
    metadata = dict(settings.metadata)

    async def call_tool(ctx: Context, **args: Any) -> str:
        client = await source.client(ctx)

        def recipient(channel: str, to: str | None) -> str:
            return source.recipient(ctx, channel, to)

        call = ToolCall(client, recipient, ctx.report_progress, metadata)
        try:
            return await tool.run(call, args)
        except HumanWireError as exc:
            # The service refused (or the client's own check did): the model reads why.
            raise ToolError(f"humanwire: {exc}") from exc

    return _SdkTool(
        fn=call_tool,
        name=tool.name,
        description=tool.description,
        parameters=plain_json_schema(tool.schema),
        fn_metadata=FuncMetadata(arg_model=arguments),
        is_async=True,
        context_kwarg="ctx",
    )


def build_server(
    settings: McpSettings,
    source: ToolSource,
    channels: tuple[str, ...] = CHANNELS,
    *,
    gated: Sequence[GatedTool | Callable[..., Any]] = (),
) -> MCPServer:
    """An ``MCPServer`` offering the tools of ``settings`` for ``channels``, and
    ``gated``: functions of your own that run only once people approve the call
    (``humanwire.mcp.gate``; a bare function is ``GatedTool(fn)``)."""
    mcp_tools = build_tools(settings, channels)
    arguments = {tool.name: _arguments(tool) for tool in mcp_tools}
    tools = [_sdk_tool(tool, source, settings, arguments[tool.name]) for tool in mcp_tools]
    # 2026-07-28 clients that declare the tasks extension get a task from a waiting tool.
    tasks = HumanTasks(mcp_tools, arguments, source, settings.metadata)
    try:
        key = state_key_bytes(settings.state_key)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    gate = HumanGate(
        [tool if isinstance(tool, GatedTool) else GatedTool(tool) for tool in gated],
        source,
        settings,
        ApprovalState(key),
    )
    # MCPServer() runs logging.basicConfig (INFO, a rich handler) on the root logger: in
    # the service, embedded in a user's process, that is not ours to change. Put it back.
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        server = MCPServer(
            "humanwire",
            instructions=INSTRUCTIONS,
            tools=tools,
            extensions=[tasks, gate],
            # Continuations (input-required results) outlive the process under a key of
            # the server's own, and a person's time: not the SDK's per-process 600 s.
            request_state_security=request_state_security(key),
        )
        tasks.server = server
        gate.server = server
        return server
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


class ConfiguredSource:
    """One client (given, or built on first use from ``HUMANWIRE_BASE_URL`` /
    ``HUMANWIRE_API_KEY``, else the embedded service) and the recipients of the
    settings, resolved once (see ``humanwire.approval.resolve_recipient``)."""

    def __init__(self, settings: McpSettings, client: AsyncHumanWire | None = None) -> None:
        self.settings = settings
        self._client = client
        self._lock = asyncio.Lock()
        self.recipients: dict[str, str] = {}
        self.missing: dict[str, str] = {}
        for channel in CHANNELS:
            try:
                self.recipients[channel] = resolve_recipient(
                    channel, settings.configured_recipient(channel), client
                )
            except ValueError as exc:
                self.missing[channel] = str(exc)

    @property
    def channels(self) -> tuple[str, ...]:
        """The channels offered: those with a recipient (every one when the model may
        name the recipient). Raises ``SettingsError`` naming the variables when none and
        no person is configured either (then only the person tools are offered)."""
        if self.settings.expose_recipients:
            return CHANNELS
        offered = tuple(channel for channel in CHANNELS if channel in self.recipients)
        if not offered and self.settings.person is None:
            variables = ", ".join(
                dict.fromkeys(
                    (RECIPIENT_ENV | MESSAGE_RECIPIENT_ENV)[channel] for channel in CHANNELS
                )
            )
            raise SettingsError(
                f"no recipient configured: pass --to or --person, or set one of {variables} "
                "or HUMANWIRE_PERSON"
            )
        return offered

    async def client(self, ctx: Context) -> AsyncHumanWire:
        async with self._lock:
            if self._client is None:
                from humanwire._client import AsyncHumanWire

                # Building it may start the embedded service: off the event loop.
                self._client = await asyncio.to_thread(AsyncHumanWire)
            return self._client

    def recipient(self, ctx: Context, channel: str, to: str | None) -> str:
        if channel == PERSON:
            if self.settings.person is None:
                raise ToolError("humanwire: no person configured: pass --person")
            return self.settings.person
        if to and self.settings.expose_recipients:
            return to
        found = self.recipients.get(channel)
        if found is None:
            if self.settings.expose_recipients:
                raise ToolError(f"humanwire: no default {channel} recipient: give 'to'")
            raise ToolError(f"humanwire: {self.missing.get(channel, 'no recipient')}")
        return found

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
