"""The humanwire tools as Agno toolkits.

Each tool is an Agno ``Toolkit`` holding one ``Function``: the name, description and plain
argument schema of ``humanwire._tooling`` / ``humanwire._tool_schemas`` (the LangChain and
MCP tools read the same), handed to Agno as they are (``skip_entrypoint_processing``), with
a sync entrypoint for ``agent.run`` and an async one for ``agent.arun``. Each runs one
client call (an :class:`~humanwire._tooling.Operation`). The kinds of tool (their options,
schemas and client calls) are ``humanwire._tool_kinds``, shared with the other adapters;
this module joins them to Agno.

How a call ends, in Agno's own terms:

- answered, timed out (the no-response text), sent without waiting, a missed call: the
  text for the model, as the tool's result;
- arguments that do not fit the schema, a form the model designed badly, the service
  refused or could not be reached: the tool raises :class:`HumanWireToolError` with
  ``humanwire: <reason>``, which Agno catches and hands the model as the failed call's
  result (its own way of reporting a tool error); the run goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING, Any

from agno.tools import Toolkit
from agno.tools.function import Function
from pydantic import BaseModel, ValidationError

from humanwire import _tool_kinds as kinds
from humanwire._tool_kinds import DEFAULT_WAIT_TIME, MessageTool, ToolCore, error_text
from humanwire._tooling import plain_json_schema
from humanwire.errors import HumanWireError

if TYPE_CHECKING:
    from humanwire._client import HumanWire

# Read at run time only: type checkers take every class below as exported (a star
# in __all__ hides them from mypy), so `from humanwire.<adapter> import AskHumanSMS`
# type-checks.
if not TYPE_CHECKING:
    __all__ = [
        "DEFAULT_WAIT_TIME",
        "HumanWireTool",
        "HumanWireToolError",
        "MessageTool",
        "SchemaToolkit",
        "error_text",
        *kinds.TOOL_CLASS_NAMES,
    ]


class HumanWireToolError(Exception):
    """A humanwire tool call that did not work (its message is what the model reads):
    Agno turns it into the call's failed result."""


class SchemaToolkit(Toolkit):
    """An Agno ``Toolkit`` of one function, described by a name, a description and a
    pydantic argument model (its plain JSON schema as the function's ``parameters``)."""

    def __init__(self, *, name: str, description: str, spec_model: type[BaseModel]) -> None:
        super().__init__(name=name, auto_register=False)
        self.description = description
        self.parameters = plain_json_schema(spec_model)
        self.functions[name] = self._function(self.call)
        self.async_functions[name] = self._function(self.acall)

    def _function(self, entrypoint: Any) -> Function:
        return Function(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            entrypoint=entrypoint,
            # The schema a model reads is exactly the shared one (Agno would derive one
            # from the entrypoint's signature, which takes ``**arguments``).
            skip_entrypoint_processing=True,
        )

    def call(self, **arguments: Any) -> str:
        """The sync entrypoint (``agent.run``)."""
        raise NotImplementedError

    async def acall(self, **arguments: Any) -> str:
        """The async entrypoint (``agent.arun``)."""
        raise NotImplementedError


class HumanWireTool(ToolCore, SchemaToolkit):
    """Base of the humanwire tools: an Agno toolkit of one function whose arguments are
    read with a shared schema and whose call is one :class:`~humanwire._tooling.Operation`.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire``, ``async_client`` an
    ``AsyncHumanWire`` (see :class:`~humanwire._tool_clients.ToolClients`). ``agent.run``
    calls the tool on the ``HumanWire`` given (or a sync twin of the ``AsyncHumanWire``
    given), else on an event loop of its own (one async client per loop); ``agent.arun``
    on the running loop. ``metadata`` (string
    keys and values) goes with every send and comes back on the interaction's status and
    events.
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

    _sync_twin: HumanWire | None = None

    def _sync_client(self) -> HumanWire | None:
        """The ``HumanWire`` given, else a twin of the ``AsyncHumanWire`` given (an async
        client belongs to its event loop: a sync run must not use it), else ``None``."""
        if self.clients.client is not None:
            return self.clients.client
        if self.clients.async_client is not None and self._sync_twin is None:
            self._sync_twin = self.clients.async_client.to_sync()
        return self._sync_twin

    def call(self, **arguments: Any) -> str:
        client = self._sync_client()
        if client is None:
            # No sync client: the async call, on a loop of its own in a worker thread
            # (a sync agent.run may itself be called from a running loop).
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
                return pool.submit(asyncio.run, self.acall(**arguments)).result()
        try:
            return self.operation_for(arguments).run(client)
        except (ValidationError, HumanWireError) as exc:
            raise HumanWireToolError(error_text(exc)) from exc

    async def acall(self, **arguments: Any) -> str:
        try:
            return await self.arun(arguments)
        except (ValidationError, HumanWireError) as exc:
            # Arguments that do not fit, a form refused before sending, a service
            # failure: a failed call the model adapts to; the run goes on.
            raise HumanWireToolError(error_text(exc)) from exc


# --- the tools: a kind (options, schema, call) joined to Agno ----------------------------


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
