"""The humanwire tools as Google ADK tools (``BaseTool`` subclasses).

Each tool *is* a ``google.adk.tools.BaseTool``, so ``LlmAgent(tools=[AskHumanSMS(),
HumanForm()])`` works as with any tool. Its declaration is the shared JSON schema of
``humanwire._tool_schemas`` as the ``FunctionDeclaration``'s ``parameters_json_schema``
(no conversion to Gemini's ``Schema``), with the name and description the LangChain,
LlamaIndex, MCP and OpenAI Agents tools have; arguments are validated by the same
pydantic models, and the call runs on the async core client. The kinds of tool (options,
schemas, client calls) are ``humanwire._tool_kinds``; this module joins them to ADK.

What the model reads, in ADK's own shapes:

- answered, timed out (the no-response text), sent without waiting: the text, which ADK
  hands the model as ``{"result": <text>}``;
- a service error (a bad number, an unknown interaction, a rate limit, the service
  unreachable) or arguments that do not fit: ``{"error": "humanwire: <reason>"}``, the
  shape ADK's own tools answer a failed call with (its ``FunctionTool`` for bad or
  missing arguments, a rejected confirmation, an unknown tool), which its telemetry
  records as a tool error. ``raise_errors=True`` raises the ``HumanWireError`` instead,
  for the agent's or a plugin's ``on_tool_error_callback``; without one the run fails.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
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
        "DEFAULT_WAIT_TIME",
        "HumanWireTool",
        "humanwire_error_response",
        *kinds.TOOL_CLASS_NAMES,
    ]


def humanwire_error_response(error: Exception) -> dict[str, str]:
    """What a failed call answers the model: ``{"error": "humanwire: <reason>"}``, the
    service's reason (or the argument that does not fit), written for a model."""
    return {"error": error_text(error)}


class HumanWireTool(ToolCore, BaseTool):
    """Base of the humanwire tools: an ADK ``BaseTool`` whose declaration is
    ``args_model``'s plain JSON schema and whose call is one
    :class:`~humanwire._tooling.Operation` on the async client.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire`` (the sync one's async twin
    is made for the same service and account, one per event loop: ADK's sync
    ``Runner.run`` runs each call on a loop of its own); left out, one is built from the
    environment (``HUMANWIRE_API_KEY`` / ``HUMANWIRE_BASE_URL``, the embedded service
    otherwise) on first use. ``metadata`` is every send's metadata on the service.
    ``raise_errors=True`` raises a failed call's ``HumanWireError`` (or
    ``ValidationError``) for ADK's ``on_tool_error_callback`` instead of answering
    ``{"error": ...}``. Other keyword arguments go to ``BaseTool`` (``custom_metadata``...).
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        args_model: type[BaseModel],
        raise_errors: bool = False,
        **options: Any,
    ) -> None:
        self.raise_errors = raise_errors
        self._parameters = plain_json_schema(args_model)
        super().__init__(args_model=args_model, name=name, description=description, **options)

    def _get_declaration(self) -> types.FunctionDeclaration:
        # A copy each time: model adapters rewrite the schema they are given.
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=copy.deepcopy(self._parameters),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        try:
            return await self.arun(args)
        except (HumanWireError, ValidationError) as exc:
            # A human who does not answer is a normal result (the no-response text) and
            # never reaches here; this is a failed request or arguments that do not fit.
            if self.raise_errors:
                raise
            return humanwire_error_response(exc)

    def _detect_error_in_response(self, response: Any) -> str | None:
        """ADK's telemetry hook (as on its ``FunctionTool``): an ``{"error": ...}`` answer
        is recorded as a tool error."""
        if isinstance(response, dict) and response.get("error"):
            return "TOOL_ERROR"
        return None


# --- the tools: a kind (options, schema, call) joined to ADK ----------------------------


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
