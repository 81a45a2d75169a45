"""The humanwire tools as OpenAI Agents SDK ``FunctionTool`` objects.

Each tool *is* a ``FunctionTool`` (a subclass: the SDK's copy of a tool supports
subclasses with their own constructor), so ``Agent(tools=[AskHumanSMS(), HumanForm()])``
works as with any tool. Names, descriptions and argument schemas are the shared ones of
``humanwire._tooling`` / ``humanwire._tool_schemas``, as in the LangChain, LlamaIndex and
MCP adapters; arguments are validated by the same pydantic models, and the call runs on
the async core client. The kinds of tool (their options, schemas and client calls) are
``humanwire._tool_kinds``, shared with the other adapters; this module joins them to the
SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents import FunctionTool, RunContextWrapper
from agents.tool import ToolErrorFunction
from agents.tool_context import ToolContext
from agents.tracing import SpanError, get_current_span
from pydantic import BaseModel, ValidationError

from humanwire import _tool_kinds as kinds
from humanwire._tool_kinds import DEFAULT_WAIT_TIME, ToolCore, error_text, form_description_text
from humanwire._tooling import plain_json_schema
from humanwire.errors import HumanWireError

# Read at run time only: type checkers take every class below as exported (a star
# in __all__ hides them from mypy), so `from humanwire.<adapter> import AskHumanSMS`
# type-checks.
if not TYPE_CHECKING:
    __all__ = [
        "DEFAULT_WAIT_TIME",
        "HumanWireTool",
        "form_description_text",
        "humanwire_error_message",
        *kinds.TOOL_CLASS_NAMES,
    ]


def humanwire_error_message(context: RunContextWrapper[Any], error: Exception) -> str:
    """The tools' default ``failure_error_function``: what failed, in the service's words
    (a bad number, an unknown interaction, a form the service refuses), so the model can
    act on it. The SDK's own default hides the reason ("An error occurred while running
    the tool"); these reasons are written for a model and carry no secret."""
    return error_text(error)


class HumanWireTool(ToolCore, FunctionTool):
    """Base of the humanwire tools: a ``FunctionTool`` whose arguments follow
    ``args_model`` and whose call is one :class:`~humanwire._tooling.Operation` on the
    async client.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire`` (the sync one's async twin
    is made for the same service and account, one per event loop); left out, one is built
    from the environment (``HUMANWIRE_API_KEY`` / ``HUMANWIRE_BASE_URL``, the embedded
    service otherwise) on first use. ``metadata`` is every send's metadata on the service.

    ``failure_error_function`` is the SDK's own hook for a failed call: given the run
    context and the exception it returns the text the model gets instead of a result
    (default :func:`humanwire_error_message`); ``None`` raises instead, and the SDK ends
    the run with ``UserError`` caused by the ``HumanWireError``. Other keyword arguments
    go to ``FunctionTool`` (``is_enabled``, ``needs_approval``, ``tool_input_guardrails``,
    ``timeout_seconds``...).

    The schema is sent non-strict (``strict_json_schema=False``): OpenAI's strict mode
    makes every property required, which would force a model to fill ``to`` and every
    optional form setting; the shared schemas are built around leaving them out.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        args_model: type[BaseModel],
        failure_error_function: ToolErrorFunction | None = humanwire_error_message,
        **options: Any,
    ) -> None:
        self.failure_error_function = failure_error_function
        options.setdefault("strict_json_schema", False)
        super().__init__(
            args_model=args_model,
            name=name,
            description=description,
            params_json_schema=plain_json_schema(args_model),
            on_invoke_tool=self._invoke,
            **options,
        )

    async def _invoke(self, context: ToolContext[Any], arguments: str) -> str:
        try:
            return await self.arun(arguments)
        except (HumanWireError, ValidationError) as exc:
            # A human who does not answer is a normal result (the no-response text) and
            # never reaches here; this is a failed request or arguments that do not fit.
            if self.failure_error_function is None:
                raise
            _mark_span(self.name, exc)
            message = self.failure_error_function(context, exc)
            if not isinstance(message, str):
                message = await message
            return message


def _mark_span(tool_name: str, error: Exception) -> None:
    """Show the handled failure on the tool's trace span, as the SDK does for its own."""
    span = get_current_span()
    if span is not None:
        span.set_error(
            SpanError(
                message="Error running tool (non-fatal)",
                data={"tool_name": tool_name, "error": str(error)},
            )
        )


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
