"""The humanwire tools as Pydantic AI ``Tool`` objects.

Each tool is a ``pydantic_ai.Tool`` built with ``Tool.from_schema``'s function schema:
the name, description and plain argument schema of ``humanwire._tooling`` /
``humanwire._tool_schemas`` (the LangChain and MCP tools read the same), and an async
function running one client call (an :class:`~humanwire._tooling.Operation`) on the
async client. The kinds of tool (their options, schemas and client calls) are
``humanwire._tool_kinds``, shared with the other adapters; this module joins them to
Pydantic AI.

How a call ends, in Pydantic AI's own terms:

- answered, timed out (the no-response text), sent without waiting: the text for the
  model, with the typed response as ``ToolReturn.metadata`` (kept in the message history,
  never sent to the model);
- arguments that do not fit the schema, or a form the model designed badly: ``ModelRetry``
  (the model is asked to fix its call, within the tool's retry budget);
- the service refused or could not be reached: ``ToolFailed`` with ``humanwire: <reason>``
  (the model sees a failed result and adapts; nothing is retried, the run goes on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_ai import Tool, ToolReturn
from pydantic_ai.exceptions import ModelRetry, ToolFailed

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
        "error_text",
        *kinds.TOOL_CLASS_NAMES,
    ]


class HumanWireTool(ToolCore, Tool[Any]):
    """Base of the humanwire tools: a Pydantic AI ``Tool`` whose arguments are read with a
    shared schema and whose call is one :class:`~humanwire._tooling.Operation`.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire``, ``async_client`` an
    ``AsyncHumanWire`` (see :class:`~humanwire._tool_clients.ToolClients`). ``metadata``
    (string keys and values) goes with every send and comes back on the interaction's
    status and events; it is not Pydantic AI's tool metadata. Other keyword arguments go
    to ``Tool`` (``max_retries``, ``requires_approval``...).
    """

    def __init__(
        self, *, name: str, description: str, args_model: type[BaseModel], **options: Any
    ) -> None:
        # The plain schema the other adapters show; arguments are validated in _call,
        # where a mismatch becomes a retry prompt worded for the model.
        template = Tool.from_schema(self._call, name, description, plain_json_schema(args_model))
        super().__init__(
            args_model=args_model,
            function=self._call,
            takes_ctx=False,
            name=name,
            description=description,
            function_schema=template.function_schema,
            **options,
        )

    async def _call(self, **arguments: Any) -> ToolReturn:
        try:
            operation = self.operation_for(arguments)
        except (ValidationError, HumanWireError) as exc:
            # Arguments that do not fit, or a form refused before sending (designed
            # badly): the model can fix those.
            raise ModelRetry(error_text(exc)) from None
        client = await self.clients.get()
        try:
            response = await operation.send(client)
        except HumanWireError as exc:
            # A service failure is a failed result the model adapts to, not a retry
            # prompt: asking again does not mend a bad key, a limit or an outage.
            raise ToolFailed(error_text(exc)) from exc
        return ToolReturn(operation.finish(response), metadata=response)


# --- the tools: a kind (options, schema, call) joined to Pydantic AI ----------------------


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
