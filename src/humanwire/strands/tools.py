"""The humanwire tools as Strands ``AgentTool`` objects.

Each tool is an ``AgentTool`` whose ``tool_spec`` carries the name, description and plain
argument schema of ``humanwire._tooling`` / ``humanwire._tool_schemas`` (the LangChain and
MCP tools read the same) as ``inputSchema: {"json": ...}``, and whose async ``stream``
runs one client call (an :class:`~humanwire._tooling.Operation`) on the async client. The
kinds of tool (their options, schemas and client calls) are ``humanwire._tool_kinds``,
shared with the other adapters; this module joins them to Strands.

How a call ends, in Strands' own terms (a ``toolResult``):

- answered, timed out (the no-response text), sent without waiting, a missed call:
  ``status: "success"`` with the text for the model;
- arguments that do not fit the schema, a form the model designed badly, the service
  refused or could not be reached: ``status: "error"`` with ``humanwire: <reason>``, the
  way Strands reports a failed tool (the exception rides along to ``AfterToolCallEvent``
  hooks); the model reads it and adapts, the run goes on.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool, ToolGenerator, ToolResult, ToolSpec, ToolUse

from humanwire import _tool_kinds as kinds
from humanwire._tool_kinds import DEFAULT_WAIT_TIME, MessageTool, ToolCore, error_text
from humanwire._tooling import plain_json_schema
from humanwire.errors import HumanWireError

# Read at run time only: type checkers take every class below as exported (a star
# in __all__ hides them from mypy), so `from humanwire.<adapter> import AskHumanSMS`
# type-checks.
if not TYPE_CHECKING:
    __all__ = [
        "DEFAULT_WAIT_TIME",
        "HumanWireTool",
        "MessageTool",
        "SpecTool",
        "error_result",
        "error_text",
        "text_result",
        *kinds.TOOL_CLASS_NAMES,
    ]


def text_result(tool_use: ToolUse, text: str) -> ToolResult:
    """A successful ``toolResult`` carrying the text for the model."""
    return {
        "toolUseId": str(tool_use["toolUseId"]),
        "status": "success",
        "content": [{"text": text}],
    }


def error_result(tool_use: ToolUse, text: str) -> ToolResult:
    """A failed ``toolResult`` (``status: "error"``): Strands' own way of telling the model
    a tool did not work."""
    return {"toolUseId": str(tool_use["toolUseId"]), "status": "error", "content": [{"text": text}]}


class SpecTool(AgentTool):
    """An ``AgentTool`` described by a name, a description and a pydantic argument model,
    handed to Strands as ``tool_spec`` (the model's plain JSON schema as
    ``inputSchema.json``)."""

    def __init__(self, *, name: str, description: str, spec_model: type[BaseModel]) -> None:
        super().__init__()
        self._name = name
        self.description = description
        self._input_schema = plain_json_schema(spec_model)

    @property
    def tool_name(self) -> str:
        return self._name

    @property
    def tool_spec(self) -> ToolSpec:
        # A copy each time: Strands fills in defaults on the specs it is handed.
        return {
            "name": self._name,
            "description": self.description,
            "inputSchema": {"json": copy.deepcopy(self._input_schema)},
        }

    @property
    def tool_type(self) -> str:
        return "python"


class HumanWireTool(ToolCore, SpecTool):
    """Base of the humanwire tools: a Strands ``AgentTool`` whose arguments are read with
    a shared schema and whose call is one :class:`~humanwire._tooling.Operation`.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire``, ``async_client`` an
    ``AsyncHumanWire`` (see :class:`~humanwire._tool_clients.ToolClients`: Strands' sync
    ``agent(...)`` runs each call on an event loop of its own, and each loop gets its own
    async client). ``metadata`` (string keys and values) goes with every send and comes
    back on the interaction's status and events.
    """

    def __init__(
        self, *, name: str, description: str, args_model: type[BaseModel], **options: Any
    ) -> None:
        super().__init__(
            args_model=args_model,
            name=name,
            description=description,
            spec_model=args_model,
            **options,
        )

    async def call(self, tool_use: ToolUse) -> tuple[ToolResult, Exception | None]:
        """Run one tool use: the ``toolResult``, and the exception behind a failed one."""
        try:
            text = await self.arun(tool_use.get("input") or {})
        except (ValidationError, HumanWireError) as exc:
            # Arguments that do not fit, a form refused before sending, a service failure:
            # a failed result the model adapts to; the run goes on.
            return error_result(tool_use, error_text(exc)), exc
        return text_result(tool_use, text), None

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        result, error = await self.call(tool_use)
        yield ToolResultEvent(result, exception=error)


# --- the tools: a kind (options, schema, call) joined to Strands --------------------------


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
