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
from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import BaseModel, ValidationError

from humanwire import _tool_kinds as kinds
from humanwire._tool_kinds import DEFAULT_WAIT_TIME, ToolCore, error_text
from humanwire._tooling import plain_json_schema
from humanwire.errors import HumanWireError

__all__ = [
    "DEFAULT_WAIT_TIME",
    "AskHumanChannel",
    "AskHumanEmail",
    "AskHumanSMS",
    "AskHumanSlack",
    "AskHumanWhatsApp",
    "CallHuman",
    "CheckHumanInteraction",
    "HumanForm",
    "HumanWireTool",
    "NotifyHumanEmail",
    "NotifyHumanSMS",
    "NotifyHumanSlack",
    "NotifyHumanWhatsApp",
    "humanwire_error_response",
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


class AskHumanSMS(kinds.AskHumanSMS, HumanWireTool):
    """Text a person by SMS and wait for the reply (``ask_human_sms``)."""


class AskHumanWhatsApp(kinds.AskHumanWhatsApp, HumanWireTool):
    """Message a person on WhatsApp and wait for the reply (``ask_human_whatsapp``)."""


class AskHumanSlack(kinds.AskHumanSlack, HumanWireTool):
    """Message a person or channel on Slack and wait for a reply in the thread
    (``ask_human_slack``)."""


class AskHumanEmail(kinds.AskHumanEmail, HumanWireTool):
    """Email a person and wait for their reply to it (``ask_human_email``)."""


class NotifyHumanSMS(kinds.NotifyHumanSMS, AskHumanSMS):
    """Send an SMS without waiting (``notify_human_sms``)."""


class NotifyHumanWhatsApp(kinds.NotifyHumanWhatsApp, AskHumanWhatsApp):
    """Send a WhatsApp message without waiting (``notify_human_whatsapp``)."""


class NotifyHumanSlack(kinds.NotifyHumanSlack, AskHumanSlack):
    """Send a Slack message without waiting (``notify_human_slack``)."""


class NotifyHumanEmail(kinds.NotifyHumanEmail, AskHumanEmail):
    """Send an email without waiting (``notify_human_email``)."""


class AskHumanChannel(kinds.AskHumanChannel, HumanWireTool):
    """Send through a channel card (``ask_human_channel``): the card holds the recipient,
    windows and templates, so the no-response text is the card's."""


class HumanForm(kinds.HumanForm, HumanWireTool):
    """Send a form link and wait for the submitted values (``human_form``).

    Fixed mode: give ``title`` and ``fields`` and the model only supplies an optional link
    message. Dynamic mode: leave them out and the model designs the form (title, fields
    with types, options, required) through a flat schema. ``form_description`` is the
    fixed form's subtitle (``description`` is the tool's own, read by the model).
    """


class CallHuman(kinds.CallHuman, HumanWireTool):
    """Place a voice call driven by a prompt and return its summary (``call_human``).

    The recipient is a phone number: ``to``, else ``HUMANWIRE_SMS_TO``, else (embedded
    service) the inbox's default human. ``transfer_to``, ``language``, ``voice`` and
    ``wait_for_call_end`` are fixed at construction.
    """


class CheckHumanInteraction(kinds.CheckHumanInteraction, HumanWireTool):
    """The status and result of an earlier interaction, a late reply included
    (``check_human_interaction``). ``wait`` holds the check up to that many seconds for a
    change (the service's ``?wait=``, at most 60)."""
