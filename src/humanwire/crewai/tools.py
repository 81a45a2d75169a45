"""The humanwire tools as CrewAI ``BaseTool`` objects.

Each tool *is* a ``crewai.tools.BaseTool`` (a pydantic model, configured by keyword like
any CrewAI tool): ``Agent(tools=[AskHumanSMS(), HumanForm()])``. Names, descriptions and
argument schemas are the shared ones of ``humanwire._tooling`` / ``humanwire._tool_schemas``
(the LangChain, LlamaIndex, MCP, OpenAI Agents and Pydantic AI tools read the same). The
call runs on the sync client: CrewAI runs tools by calling ``_run`` in its own thread.

How a call ends, in CrewAI's own terms:

- answered, timed out (the no-response text), sent without waiting: the text for the
  model;
- the service refused or could not be reached, or a form the model designed badly:
  a returned ``ToolFailure`` (``humanwire: <reason>``). CrewAI shows its text to the
  model, records it on the task's ``tool_failures`` and applies the
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
from typing import TYPE_CHECKING, Any, ClassVar, cast

from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from pydantic import (
    BaseModel,
    Field,
    GetJsonSchemaHandler,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from humanwire._tool_schemas import (
    CallInput,
    CallWithRecipientInput,
    CheckInteractionInput,
    MessageInput,
    form_input_schema,
    message_input_schema,
)
from humanwire._tooling import (
    ASK_CHANNEL_DESCRIPTION,
    CHANNEL_NAMES,
    CHECK_DESCRIPTION,
    Operation,
    ask_description,
    call_description,
    call_text,
    describe_status,
    form_description,
    form_fields_from_specs,
    form_text,
    message_text,
    notify_description,
    plain_json_schema,
    sent_text,
    with_link,
)
from humanwire.approval import Channel, check_follow_up_time, check_wait_time, resolve_recipient
from humanwire.errors import (
    APIConnectionError,
    APIStatusError,
    HumanWireError,
    InternalServerError,
    RateLimitError,
)
from humanwire.types import CallRequest, FormField, FormResponse, MessageResponse, Voice

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = [
    "DEFAULT_WAIT_TIME",
    "AskHumanChannel",
    "AskHumanSMS",
    "AskHumanSlack",
    "AskHumanWhatsApp",
    "CallHuman",
    "CheckHumanInteraction",
    "HumanForm",
    "HumanWireTool",
    "NotifyHumanSMS",
    "NotifyHumanSlack",
    "NotifyHumanWhatsApp",
    "never_cache",
    "service_failure",
    "shown_schema",
]

DEFAULT_WAIT_TIME = 300.0
"""How long a tool holds the request for the human's answer unless told otherwise."""


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
    return ToolFailure(
        message=f"humanwire: {error}", code=code, retryable=retryable, details=details
    )


def invalid_arguments(error: ValidationError) -> ToolFailure:
    """Arguments that do not fit the schema, worded as the other adapters word it."""
    problems = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"])
        problems.append(f"{where}: {problem['msg']}" if where else problem["msg"])
    return ToolFailure(
        message="humanwire: invalid arguments: " + "; ".join(problems),
        reason=ToolFailureReason.INVALID_INPUT,
    )


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


def _is_async_client(client: object) -> bool:
    from humanwire._client import AsyncHumanWire

    return isinstance(client, AsyncHumanWire)


class HumanWireTool(BaseTool):
    """Base of the humanwire tools: a CrewAI ``BaseTool`` whose call is one
    :class:`~humanwire._tooling.Operation` on the sync client.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire`` (then a sync client on its
    service and account is made); left out, one is built from the environment
    (``HUMANWIRE_API_KEY`` / ``HUMANWIRE_BASE_URL``, the embedded service otherwise) on
    first use. ``metadata`` (string keys and values) goes with every send and comes back
    on the interaction's status and events. CrewAI's own options
    (``tool_failure_policy``, ``max_usage_count``, ``result_as_answer``...) apply as to any
    tool; the result cache is off (see :func:`never_cache`).
    """

    client: Any = Field(default=None, exclude=True, repr=False)
    """A ``HumanWire`` or ``AsyncHumanWire``; built from the environment when left out."""
    metadata: dict[str, str] | None = None
    """Every send's metadata on the service."""

    @model_validator(mode="after")
    def _no_cache(self) -> HumanWireTool:
        if "cache_function" not in self.model_fields_set:
            self.cache_function = never_cache
        return self

    def _set_schema(self, model: type[BaseModel]) -> None:
        """Use the shared schema unless the tool was given its own ``args_schema``."""
        if "args_schema" not in self.model_fields_set:
            self.args_schema = shown_schema(model)

    # -- clients ---------------------------------------------------------------------------
    @property
    def configured_client(self) -> HumanWire | AsyncHumanWire | None:
        """The client given, to ask it about its service before any request."""
        return cast("HumanWire | AsyncHumanWire | None", self.client)

    def sync_client(self) -> HumanWire:
        """The client given, else one on the given async client's service and account,
        else one from the environment (made once)."""
        from humanwire._client import sync_client_for

        if self.client is not None and _is_async_client(self.client):
            self.client = sync_client_for(None, cast("AsyncHumanWire", self.client))
        client = sync_client_for(cast("HumanWire | None", self.client), None)
        self.client = client
        return client

    def send_metadata(self) -> dict[str, Any]:
        return {"metadata": dict(self.metadata)} if self.metadata else {}

    # -- calling the service -----------------------------------------------------------------
    def _operation(self, arguments: BaseModel) -> Operation[Any, str]:
        """The client call for validated ``arguments`` and how its response becomes the
        text the model reads."""
        raise NotImplementedError

    def _run(self, **arguments: Any) -> str | ToolFailure:
        try:
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


class WindowedTool(HumanWireTool):
    """A tool that waits for an answer: ``wait_time`` and ``follow_up_time`` are checked
    against the service's bounds (1-600 s, 1-60000 s) when the tool is built."""

    wait_time: float | None = DEFAULT_WAIT_TIME
    follow_up_time: float | None = None

    @field_validator("wait_time")
    @classmethod
    def _check_wait_time(cls, value: float | None) -> float | None:
        return check_wait_time(value)

    @field_validator("follow_up_time")
    @classmethod
    def _check_follow_up_time(cls, value: float | None) -> float | None:
        return check_follow_up_time(value)

    def windows(self) -> dict[str, float]:
        windows: dict[str, float] = {}
        if self.wait_time is not None:
            windows["wait_time"] = self.wait_time
        if self.follow_up_time is not None:
            windows["follow_up_time"] = self.follow_up_time
        return windows


# --- messages ---------------------------------------------------------------------------


class _MessageTool(WindowedTool):
    """Send a text to one person over a channel; wait for the reply unless ``wait_time``
    is ``None`` (then only the interaction id comes back)."""

    channel: ClassVar[Channel]

    description: str = ""
    to: str | None = None
    """The recipient: ``to``, else ``HUMANWIRE_<CHANNEL>_TO``, else (embedded service) the
    inbox's default human; resolved when the tool is built."""
    expose_recipient: bool = False
    """Let the model choose the recipient (adds an optional ``to`` argument)."""

    @model_validator(mode="after")
    def _configure(self) -> _MessageTool:
        self.to = resolve_recipient(self.channel, self.to, self.configured_client)
        waits = self.wait_time is not None
        self._set_schema(
            message_input_schema(
                note=not waits, channel=self.channel, expose_recipient=self.expose_recipient
            )
        )
        if not self.description:
            self.description = (
                ask_description(self.channel, self.wait_time)
                if self.wait_time is not None
                else notify_description(self.channel)
            )
        return self

    def _request(self, arguments: BaseModel) -> dict[str, Any]:
        given = dict(arguments)  # the schema varies: "to" only when exposed
        to = given.get("to")
        return {
            "to": to if self.expose_recipient and to else self.to,
            "message": given["message"],
            **self.windows(),
            **self.send_metadata(),
        }

    def _finish(self, response: MessageResponse) -> str:
        if self.wait_time is None:
            return sent_text(response, self.channel)
        return message_text(response)

    def _operation(self, arguments: BaseModel) -> Operation[MessageResponse, str]:
        kwargs = self._request(arguments)
        return Operation(
            lambda client: getattr(client.messages, self.channel)(**kwargs), self._finish
        )


class _FromMessageTool(_MessageTool):
    from_: str | None = None
    """The sender: an sms number of the account, or the slack workspace id."""

    def _request(self, arguments: BaseModel) -> dict[str, Any]:
        kwargs = super()._request(arguments)
        if self.from_ is not None:
            kwargs["from_"] = self.from_
        return kwargs


class AskHumanSMS(_FromMessageTool):
    """Text a person by SMS and wait for the reply (``ask_human_sms``)."""

    channel: ClassVar[Channel] = "sms"
    name: str = "ask_human_sms"


class AskHumanWhatsApp(_MessageTool):
    """Message a person on WhatsApp and wait for the reply (``ask_human_whatsapp``)."""

    channel: ClassVar[Channel] = "whatsapp"
    name: str = "ask_human_whatsapp"


class AskHumanSlack(_FromMessageTool):
    """Message a person or channel on Slack and wait for a reply in the thread
    (``ask_human_slack``)."""

    channel: ClassVar[Channel] = "slack"
    name: str = "ask_human_slack"


class NotifyHumanSMS(AskHumanSMS):
    """Send an SMS without waiting (``notify_human_sms``)."""

    name: str = "notify_human_sms"
    wait_time: float | None = None


class NotifyHumanWhatsApp(AskHumanWhatsApp):
    """Send a WhatsApp message without waiting (``notify_human_whatsapp``)."""

    name: str = "notify_human_whatsapp"
    wait_time: float | None = None


class NotifyHumanSlack(AskHumanSlack):
    """Send a Slack message without waiting (``notify_human_slack``)."""

    name: str = "notify_human_slack"
    wait_time: float | None = None


class AskHumanChannel(HumanWireTool):
    """Send through a channel card (``ask_human_channel``): the card holds the recipient,
    windows and templates, so the no-response text is the card's."""

    name: str = "ask_human_channel"
    description: str = ASK_CHANNEL_DESCRIPTION
    channel_id: str = Field(min_length=1)
    """The id of the channel card."""

    @model_validator(mode="after")
    def _configure(self) -> AskHumanChannel:
        self._set_schema(MessageInput)
        return self

    def _operation(self, arguments: BaseModel) -> Operation[MessageResponse, str]:
        message = cast(MessageInput, arguments).message
        return Operation(
            lambda client: client.messages.channel(
                self.channel_id, message=message, **self.send_metadata()
            ),
            message_text,
        )


# --- forms ------------------------------------------------------------------------------


class HumanForm(WindowedTool):
    """Send a form link and wait for the submitted values (``human_form``).

    Fixed mode: give ``title`` and ``fields`` and the model only supplies an optional link
    message. Dynamic mode: leave them out and the model designs the form (title, fields
    with types, options, required) through a flat schema. ``form_description`` is the
    fixed form's subtitle (``description`` is the tool's own, read by the model).
    """

    name: str = "human_form"
    description: str = ""

    channel: Channel = "sms"
    to: str | None = None
    expose_recipient: bool = False
    title: str | None = None
    fields: list[FormField] | None = None
    form_description: str | None = None
    submit_label: str | None = None
    brand_image_url: str | None = None
    message: str | None = None
    """Default link message on sms and slack (``{{url}}`` marks the link)."""

    @field_validator("channel")
    @classmethod
    def _known_channel(cls, value: str) -> str:
        if value not in CHANNEL_NAMES:
            raise ValueError("channel must be sms, whatsapp or slack")
        return value

    @model_validator(mode="after")
    def _configure(self) -> HumanForm:
        if (self.title is None) != (self.fields is None):
            raise ValueError("a fixed form needs both title and fields (or neither: dynamic)")
        if self.fields is not None and not self.fields:
            raise ValueError("fields: a form needs at least one field")
        if self.wait_time is None and self.follow_up_time is None:
            raise ValueError("a form needs wait_time, follow_up_time or both")
        self.to = resolve_recipient(self.channel, self.to, self.configured_client)
        self._set_schema(
            form_input_schema(
                dynamic=self.dynamic, channel=self.channel, expose_recipient=self.expose_recipient
            )
        )
        if not self.description:
            if self.dynamic:
                self.description = form_description(self.channel, self.wait_time)
            else:
                labels = [field.label for field in self.fields or []]
                self.description = form_description(
                    self.channel, self.wait_time, title=self.title, labels=labels
                )
        return self

    @property
    def dynamic(self) -> bool:
        return self.fields is None

    def _request(self, arguments: BaseModel) -> dict[str, Any]:
        given = dict(arguments)  # the schema varies with the mode, channel and recipient
        if self.dynamic:
            # The model's design: an InvalidRequestError tells it what to fix.
            form_fields = form_fields_from_specs(list(given.get("fields") or []))
            title, subtitle = given["title"], given.get("description")
        else:
            form_fields, title = list(self.fields or []), self.title
            subtitle = self.form_description
        to = given.get("to")
        kwargs: dict[str, Any] = {
            "to": to if self.expose_recipient and to else self.to,
            "title": title,
            "fields": form_fields,
            **self.windows(),
            **self.send_metadata(),
        }
        optional = {
            # CrewAI sends schemas strict (every property required): "" means left out.
            "description": subtitle or None,
            "submit_label": self.submit_label,
            "brand_image_url": self.brand_image_url,
        }
        if self.channel != "whatsapp":
            optional["message"] = with_link(given.get("message") or self.message)
        kwargs.update({key: value for key, value in optional.items() if value is not None})
        return kwargs

    @staticmethod
    def _finish(response: FormResponse) -> str:
        return form_text(response, submitted_prefix="The human submitted the form:\n")

    def _operation(self, arguments: BaseModel) -> Operation[FormResponse, str]:
        kwargs = self._request(arguments)
        return Operation(lambda client: getattr(client.forms, self.channel)(**kwargs), self._finish)


# --- calls ------------------------------------------------------------------------------


class CallHuman(HumanWireTool):
    """Place a voice call driven by a prompt and return its summary (``call_human``).

    The recipient is a phone number: ``to``, else ``HUMANWIRE_SMS_TO``, else (embedded
    service) the inbox's default human. ``transfer_to``, ``language``, ``voice`` and
    ``wait_for_call_end`` are fixed when the tool is built.
    """

    name: str = "call_human"
    description: str = ""
    to: str | None = None
    expose_recipient: bool = False
    transfer_to: str | None = None
    language: str = "en-US"
    voice: Voice = "female"
    wait_for_call_end: bool = True

    @model_validator(mode="after")
    def _configure(self) -> CallHuman:
        self.to = resolve_recipient("sms", self.to, self.configured_client)
        # The wire model checks the numbers, language and voice now, not at the first call.
        CallRequest(
            prompt="check",
            to=self.to,
            transfer_to=self.transfer_to,
            language=self.language,
            voice=self.voice,
        )
        self._set_schema(CallWithRecipientInput if self.expose_recipient else CallInput)
        if not self.description:
            self.description = call_description(self.wait_for_call_end)
        return self

    def _operation(self, arguments: BaseModel) -> Operation[Any, str]:
        given = dict(arguments)
        to = given.get("to")
        kwargs: dict[str, Any] = {
            "to": to if self.expose_recipient and to else self.to,
            "prompt": given["prompt"],
            "language": self.language,
            "voice": self.voice,
            "wait_for_call_end": self.wait_for_call_end,
            **self.send_metadata(),
        }
        if self.transfer_to is not None:
            kwargs["transfer_to"] = self.transfer_to
        return Operation(lambda client: client.calls.create(**kwargs), call_text)


# --- interactions -----------------------------------------------------------------------


class CheckHumanInteraction(HumanWireTool):
    """The status and result of an earlier interaction, a late reply included
    (``check_human_interaction``). ``wait`` holds the check up to that many seconds for a
    change (the service's ``?wait=``, at most 60)."""

    name: str = "check_human_interaction"
    description: str = CHECK_DESCRIPTION
    wait: float = Field(default=0, ge=0, le=60)

    @model_validator(mode="after")
    def _configure(self) -> CheckHumanInteraction:
        self._set_schema(CheckInteractionInput)
        return self

    def _operation(self, arguments: BaseModel) -> Operation[Any, str]:
        interaction_id = cast(CheckInteractionInput, arguments).interaction_id
        wait = self.wait or None
        return Operation(
            lambda client: client.interactions.status(interaction_id, wait=wait), describe_status
        )
