"""The humanwire tools as Claude Agent SDK in-process MCP tools.

Each tool *is* an ``SdkMcpTool`` (what the SDK's ``@tool`` decorator makes), so
``create_sdk_mcp_server(name="humanwire", tools=[AskHumanSMS(), HumanForm()])`` serves it
in the application's own process, as with any SDK tool; :func:`humanwire_server` does
that and :func:`allowed_tool_names` gives the names the CLI calls them by
(``mcp__<server>__<tool>``). Names, descriptions and argument schemas are the shared ones
of ``humanwire._tooling`` / ``humanwire._tool_schemas`` (the LangChain tools and the MCP
server read the same); arguments are validated by the same pydantic models, and the call
runs on the async core client. The kinds of tool (options, schemas, client calls) are
``humanwire._tool_kinds``, shared with the other adapters; this module joins them to the
SDK.

How a call ends, in MCP's terms (the CLI hands the model the tool result as it is):

- answered, timed out (the no-response text), sent without waiting, a missed call: a
  text result;
- arguments that do not fit, a form the model designed badly, the service refused or
  could not be reached: a text result marked ``is_error`` saying ``humanwire: <reason>``;
  the run goes on and the model adapts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from claude_agent_sdk import McpSdkServerConfig, SdkMcpTool, create_sdk_mcp_server
from pydantic import BaseModel, ValidationError

from humanwire import _tool_kinds as kinds
from humanwire._tool_kinds import DEFAULT_WAIT_TIME, ToolCore, error_text
from humanwire._tooling import plain_json_schema
from humanwire.errors import HumanWireError

# Read at run time only: type checkers take every class below as exported (a star
# in __all__ hides them from mypy), so `from humanwire.<adapter> import AskHumanSMS`
# type-checks.
if not TYPE_CHECKING:
    __all__ = [
        "DEFAULT_SERVER_NAME",
        "DEFAULT_WAIT_TIME",
        "HumanWireTool",
        "allowed_tool_names",
        "humanwire_server",
        *kinds.TOOL_CLASS_NAMES,
    ]

DEFAULT_SERVER_NAME = "humanwire"
"""The in-process MCP server's name: its tools are ``mcp__humanwire__<tool>``."""

ToolResult = dict[str, Any]


def text_result(text: str, *, is_error: bool = False) -> ToolResult:
    """An MCP tool result of one text block (what an SDK tool handler returns)."""
    result: ToolResult = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["is_error"] = True
    return result


class HumanWireTool(ToolCore, SdkMcpTool[Any]):
    """Base of the humanwire tools: an ``SdkMcpTool`` whose arguments follow
    ``args_model`` (its plain JSON schema is the tool's ``input_schema``) and whose call
    is one :class:`~humanwire._tooling.Operation` on the async client.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire`` (the sync one's async
    twin is made for the same service and account, one per event loop); left out, one is
    built from the environment (``HUMANWIRE_API_KEY`` / ``HUMANWIRE_BASE_URL``, the
    embedded service otherwise) on first use. ``metadata`` is every send's metadata on the
    service.
    """

    def __init__(
        self, *, name: str, description: str, args_model: type[BaseModel], **options: Any
    ) -> None:
        super().__init__(
            args_model=args_model,
            name=name,
            description=description,
            input_schema=plain_json_schema(args_model),
            handler=self._handle,
            **options,
        )

    async def _handle(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            return text_result(await self.arun(arguments))
        except (ValidationError, HumanWireError) as exc:
            # A human who does not answer is a normal result (the no-response text) and
            # never reaches here; this is a failed request or arguments that do not fit.
            return text_result(error_text(exc), is_error=True)


def humanwire_server(
    tools: Iterable[SdkMcpTool[Any]],
    *,
    name: str = DEFAULT_SERVER_NAME,
    version: str = "1.0.0",
) -> McpSdkServerConfig:
    """An in-process SDK MCP server of ``tools`` (``ClaudeAgentOptions(mcp_servers={name:
    humanwire_server([...])})``): the CLI calls each ``mcp__<name>__<tool>``."""
    return create_sdk_mcp_server(name=name, version=version, tools=list(tools))


def allowed_tool_names(
    tools: Iterable[SdkMcpTool[Any]], *, server: str = DEFAULT_SERVER_NAME
) -> list[str]:
    """The names the CLI gives ``tools`` served as ``server`` (``mcp__<server>__<tool>``):
    ``ClaudeAgentOptions(allowed_tools=...)`` lets them run without asking (the CLI
    refuses an MCP tool nobody allowed and no ``can_use_tool`` gate let through)."""
    return [f"mcp__{server}__{tool.name}" for tool in tools]


# --- the tools: a kind (options, schema, call) joined to the SDK ------------------------


class AskHumanSMS(kinds.AskHumanSMS, HumanWireTool): ...


class AskHumanWhatsApp(kinds.AskHumanWhatsApp, HumanWireTool): ...


class AskHumanSlack(kinds.AskHumanSlack, HumanWireTool): ...


class AskHumanEmail(kinds.AskHumanEmail, HumanWireTool): ...


class AskHumanTelegram(kinds.AskHumanTelegram, HumanWireTool): ...


class AskHumanTeams(kinds.AskHumanTeams, HumanWireTool): ...


class AskHumanDiscord(kinds.AskHumanDiscord, HumanWireTool): ...


class NotifyHumanSMS(kinds.NotifyHumanSMS, AskHumanSMS): ...


class NotifyHumanWhatsApp(kinds.NotifyHumanWhatsApp, AskHumanWhatsApp): ...


class NotifyHumanSlack(kinds.NotifyHumanSlack, AskHumanSlack): ...


class NotifyHumanEmail(kinds.NotifyHumanEmail, AskHumanEmail): ...


class NotifyHumanTelegram(kinds.NotifyHumanTelegram, AskHumanTelegram): ...


class NotifyHumanTeams(kinds.NotifyHumanTeams, AskHumanTeams): ...


class NotifyHumanDiscord(kinds.NotifyHumanDiscord, AskHumanDiscord): ...


class AskHumanPerson(kinds.AskHumanPerson, HumanWireTool): ...


class NotifyHumanPerson(kinds.NotifyHumanPerson, AskHumanPerson): ...


class AskHumanChannel(kinds.AskHumanChannel, HumanWireTool): ...


class HumanForm(kinds.HumanForm, HumanWireTool): ...


class CallHuman(kinds.CallHuman, HumanWireTool): ...


class CheckHumanInteraction(kinds.CheckHumanInteraction, HumanWireTool): ...
