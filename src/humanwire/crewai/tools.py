"""The humanwire tools as CrewAI ``BaseTool`` objects.

Each tool *is* a ``crewai.tools.BaseTool`` (a pydantic model, configured by keyword like
any CrewAI tool): ``Agent(tools=[AskHumanSMS(), HumanForm()])``. Names, descriptions and
argument schemas are the shared ones of ``humanwire._tooling`` / ``humanwire._tool_schemas``
(the LangChain, LlamaIndex, MCP, OpenAI Agents and Pydantic AI tools read the same). The
kinds of tool (their options, schemas and client calls) are ``humanwire._tool_kinds``,
shared with the other adapters; this module joins them to CrewAI. The call runs on the
sync client: CrewAI runs tools by calling ``_run`` in its own thread.

How a call ends, in CrewAI's own terms:

- answered, timed out (the no-response text), sent without waiting: the text for the
  model;
- the service refused or could not be reached, or a form the model designed badly:
  a returned ``ToolFailure`` (``humanwire: <reason>``). CrewAI shows its text to the
  model, records it in ``task.output.tool_failures`` and applies the
  ``tool_failure_policy`` (``warn`` by default; ``raise`` ends the run). The tool never
  raises: CrewAI's text-protocol loop runs a raising tool up to three times more, and a
  message would go out each time.
- arguments that do not fit the schema: CrewAI's own validation refuses them before the
  tool runs, and the model reads what to fix.
"""

from __future__ import annotations

import asyncio
import json
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from pydantic import (
    BaseModel,
    GetJsonSchemaHandler,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, to_jsonable_python

from humanwire import _tool_kinds as kinds
from humanwire._tool_kinds import DEFAULT_WAIT_TIME, ModelToolCore, error_text
from humanwire._tooling import plain_json_schema
from humanwire.errors import (
    APIConnectionError,
    APIStatusError,
    HumanWireError,
    InternalServerError,
    RateLimitError,
)

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

# Read at run time only: type checkers take every class below as exported (a star
# in __all__ hides them from mypy), so `from humanwire.<adapter> import AskHumanSMS`
# type-checks.
if not TYPE_CHECKING:
    __all__ = [
        "DEFAULT_WAIT_TIME",
        "HumanWireTool",
        "never_cache",
        "service_failure",
        "shown_schema",
        *kinds.TOOL_CLASS_NAMES,
    ]


def never_cache(arguments: Any = None, result: Any = None) -> bool:
    """The tools' ``cache_function``: a person's answer is never reused. A crew with
    ``cache=True`` reuses a tool's result for the same arguments unless told not to, so
    the same question asked twice would get the first answer, the person never asked."""
    return False


def service_failure(error: HumanWireError) -> ToolFailure:
    """A failed request as CrewAI's ``ToolFailure``: the model reads ``humanwire:
    <reason>`` (and the service's code); rate limits, outages and unreachable services
    are marked retryable."""
    code = error.code if isinstance(error, APIStatusError) else None
    retryable = isinstance(error, (RateLimitError, InternalServerError, APIConnectionError))
    details: dict[str, Any] = {}
    if isinstance(error, APIStatusError):
        details["status_code"] = error.status_code
    return ToolFailure(message=error_text(error), code=code, retryable=retryable, details=details)


def invalid_arguments(error: ValidationError) -> ToolFailure:
    """Arguments that do not fit the schema, worded as the other adapters word it."""
    return ToolFailure(message=error_text(error), reason=ToolFailureReason.INVALID_INPUT)


@cache
def shown_schema(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` as a CrewAI ``args_schema`` whose JSON schema is the shared plain one
    (no titles, references inlined), so the schema CrewAI renders for the model is the
    other adapters' one, with only CrewAI's own strict-mode additions: every property
    listed in ``required`` and ``additionalProperties: false``."""
    plain = plain_json_schema(model)

    def __get_pydantic_json_schema__(
        cls: type[BaseModel], core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # A copy: CrewAI edits the schema it is given in place.
        copied: JsonSchemaValue = json.loads(json.dumps(plain))
        return copied

    # The same name (validation errors name the model), the shared model's fields.
    metaclass: Any = type(model)
    shown: type[BaseModel] = metaclass(
        model.__name__,
        (model,),
        {
            "__module__": model.__module__,
            "__qualname__": model.__qualname__,
            "__get_pydantic_json_schema__": classmethod(__get_pydantic_json_schema__),
        },
    )
    return shown


_NOT_SAVED = frozenset({"client", "async_client"})


class HumanWireTool(ModelToolCore, BaseTool):
    """Base of the humanwire tools: a CrewAI ``BaseTool`` whose call is one
    :class:`~humanwire._tooling.Operation` on the sync client.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire`` (then a sync client on its
    service and account is made); left out, one is built from the environment
    (``HUMANWIRE_API_KEY`` / ``HUMANWIRE_BASE_URL``, the embedded service otherwise) on
    first use. ``metadata`` (string keys and values) goes with every send and comes back
    on the interaction's status and events. CrewAI's own options (``args_schema``,
    ``tool_failure_policy``, ``max_usage_count``, ``result_as_answer``...) apply as to any
    tool; the result cache is off (see :func:`never_cache`).

    A CrewAI tool is a pydantic model; the kind's settings (recipient, windows, form...)
    are plain attributes beside its fields, so ``model_dump`` shows CrewAI's fields only
    (never the client).
    """

    _sync_client: HumanWire | None = PrivateAttr(default=None)

    if not TYPE_CHECKING:
        # ToolCore's attributes: plain ones, not pydantic fields.
        args_model: ClassVar[Any]
        clients: ClassVar[Any]
        send_metadata: ClassVar[Any]

    def __new__(cls, *args: Any, **options: Any) -> Any:
        tool = super().__new__(cls)
        # What the tool was built from, so CrewAI's saved tool (its model_dump, rebuilt by
        # model_validate through the constructor) is the same tool; never a client.
        settings = {key: value for key, value in options.items() if key not in _NOT_SAVED}
        object.__setattr__(tool, "_settings", dict(enumerate(args)) | settings)
        return tool

    def __init__(
        self, *, name: str, description: str, args_model: type[BaseModel], **options: Any
    ) -> None:
        options.setdefault("args_schema", shown_schema(args_model))
        options.setdefault("cache_function", never_cache)
        super().__init__(name=name, description=description, args_model=args_model, **options)

    @model_serializer(mode="wrap")
    def _with_settings(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        settings = {
            key: value
            for key, value in self.__dict__.get("_settings", {}).items()
            if isinstance(key, str) and key not in dumped
        }
        if info.mode_is_json():
            settings = to_jsonable_python(settings)
        return settings | dumped

    @property
    def configured_client(self) -> HumanWire | AsyncHumanWire | None:
        """The client given, to ask it about its service before any request."""
        return self.clients.configured

    def sync_client(self) -> HumanWire:
        """The client given, else one on the given async client's service and account,
        else one from the environment (made once)."""
        from humanwire._client import sync_client_for

        if self._sync_client is None:
            self._sync_client = sync_client_for(self.clients.client, self.clients.async_client)
        return self._sync_client

    def _run(self, **arguments: Any) -> str | ToolFailure:
        try:
            # ``args_schema``: the shared argument model, or the one the tool was given.
            parsed = self.args_schema.model_validate(arguments)
        except ValidationError as exc:
            return invalid_arguments(exc)
        try:
            return self._operation(parsed).run(self.sync_client())
        except HumanWireError as exc:
            # A human who does not answer is a normal result (the no-response text) and
            # never reaches here; this is a failed request or a form the service refuses.
            return service_failure(exc)

    async def _arun(self, **arguments: Any) -> str | ToolFailure:
        """``BaseTool.arun``: the blocking call in a worker thread. (CrewAI itself runs
        tools through ``_run``, in async crews too.)"""
        return await asyncio.to_thread(self._run, **arguments)


# --- the tools: a kind (options, schema, call) joined to CrewAI -------------------------


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


class AskHumanChannel(kinds.AskHumanChannel, HumanWireTool):
    def __init__(self, channel_id: str = "", **options: Any) -> None:
        # By keyword, as any CrewAI tool option: left out, the kind's ValueError.
        super().__init__(channel_id, **options)


class HumanForm(kinds.HumanForm, HumanWireTool):
    def _request(self, arguments: BaseModel) -> dict[str, Any]:
        kwargs = super()._request(arguments)
        # CrewAI sends schemas strict (every property required): "" means left out.
        if not kwargs.get("description"):
            kwargs.pop("description", None)
        return kwargs


class CallHuman(kinds.CallHuman, HumanWireTool): ...


class CheckHumanInteraction(kinds.CheckHumanInteraction, HumanWireTool): ...
