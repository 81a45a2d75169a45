"""The humanwire tools as Microsoft Agent Framework function tools.

Each tool is a ``FunctionTool`` whose name, description and argument schema are those of
``humanwire._tooling`` / ``humanwire._tool_schemas`` (the LangChain and MCP tools read the
same), the schema handed to the framework as it is (``input_model`` as a JSON schema), the
arguments read by the shared pydantic models. Each runs one client call (an
:class:`~humanwire._tooling.Operation`) on the running event loop: an agent run is async.
The kinds of tool (their options, schemas and client calls) are ``humanwire._tool_kinds``,
shared with the other adapters; this module joins them to the framework.

How a call ends: answered, timed out (the no-response text), sent without waiting, a missed
call, and also arguments that do not fit, a form the model designed badly, the service
refusing or unreachable: the text for the model, as the tool's result
(``humanwire: <reason>`` for a failure), so the model adapts and the run goes on. (The
framework hides a raised exception's message from the model unless the client was built
with detailed errors: a result the model can read is the one that works everywhere.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_framework import FunctionTool
from pydantic import BaseModel, ValidationError

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


class HumanWireTool(ToolCore, FunctionTool):
    """Base of the humanwire tools: a ``FunctionTool`` whose arguments are read with a
    shared schema and whose call is one :class:`~humanwire._tooling.Operation`.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire``, ``async_client`` an
    ``AsyncHumanWire`` (see :class:`~humanwire._tool_clients.ToolClients`); left out, one
    from the environment per event loop. ``metadata`` (string keys and values) goes with
    every send and comes back on the interaction's status and events. Other keyword
    arguments (``approval_mode``, ``max_invocations``, …) go to ``FunctionTool``.
    """

    def __init__(
        self, *, name: str, description: str, args_model: type[BaseModel], **options: Any
    ) -> None:
        super().__init__(
            args_model=args_model,
            name=name,
            description=description,
            # The schema a model reads is exactly the shared one (a model class would be
            # rendered by the framework its own way); the call validates with the model.
            input_model=plain_json_schema(args_model),
            func=self._call,
            **options,
        )

    async def _call(self, **arguments: Any) -> str:
        try:
            return await self.arun(arguments)
        except (ValidationError, HumanWireError) as exc:
            # Arguments that do not fit, a form refused before sending, a service
            # failure: a result the model adapts to; the run goes on.
            return error_text(exc)


# --- the tools: a kind (options, schema, call) joined to the framework ------------------


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
