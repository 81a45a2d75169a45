"""The humanwire tools as Strands ``AgentTool`` objects.

Each tool is an ``AgentTool`` whose ``tool_spec`` carries the name, description and plain
argument schema of ``humanwire._tooling`` / ``humanwire._tool_schemas`` (the LangChain and
MCP tools read the same) as ``inputSchema: {"json": ...}``, and whose async ``stream``
runs one client call (an :class:`~humanwire._tooling.Operation`) on the async client.

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
import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ValidationError
from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool, ToolGenerator, ToolResult, ToolSpec, ToolUse

from humanwire._tool_clients import ToolClients
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
    form_fields_from_specs,
    form_text,
    message_text,
    notify_description,
    plain_json_schema,
    sent_text,
    with_link,
)
from humanwire._tooling import form_description as describe_form
from humanwire.approval import Channel, check_follow_up_time, check_wait_time, resolve_recipient
from humanwire.errors import HumanWireError
from humanwire.types import CallRequest, FormField, Voice

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
    "MessageTool",
    "NotifyHumanSMS",
    "NotifyHumanSlack",
    "NotifyHumanWhatsApp",
    "error_result",
    "invalid_arguments",
    "text_result",
]

DEFAULT_WAIT_TIME = 300.0
"""How long a tool holds the request for the human's answer unless told otherwise."""


class _Unset(enum.Enum):
    UNSET = 0


_UNSET = _Unset.UNSET
"""A tool class's own default (``None`` is a meaningful ``wait_time``: do not wait)."""


def invalid_arguments(exc: ValidationError) -> str:
    """What the model reads when its arguments do not fit the schema: the field named
    (worded as the LangChain and MCP tools word it)."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "humanwire: invalid arguments: " + "; ".join(problems)


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


class HumanWireTool(AgentTool):
    """Base of the humanwire tools: a Strands ``AgentTool`` whose arguments are read with
    a shared schema and whose call is one :class:`~humanwire._tooling.Operation`.

    ``client`` may be a ``HumanWire`` or an ``AsyncHumanWire`` (see
    :class:`~humanwire._tool_clients.ToolClients`). ``metadata`` (string keys and values)
    goes with every send and comes back on the interaction's status and events.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        schema: type[BaseModel],
        clients: ToolClients,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self._name = name
        self.description = description
        self.schema = schema
        self.clients = clients
        self.send_metadata = dict(metadata or {})
        self._input_schema = plain_json_schema(schema)

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

    def _meta(self) -> dict[str, Any]:
        return {"metadata": dict(self.send_metadata)} if self.send_metadata else {}

    def _operation(self, arguments: Any) -> Operation[Any, str]:
        """The client call for these (validated) arguments and how its response becomes
        the text for the model."""
        raise NotImplementedError

    async def call(self, tool_use: ToolUse) -> tuple[ToolResult, Exception | None]:
        """Run one tool use: the ``toolResult``, and the exception behind a failed one."""
        try:
            operation = self._operation(self.schema.model_validate(tool_use.get("input") or {}))
        except ValidationError as exc:
            return error_result(tool_use, invalid_arguments(exc)), exc
        except HumanWireError as exc:
            # Refused before sending (a form the model designed badly): it can fix that.
            return error_result(tool_use, f"humanwire: {exc}"), exc
        try:
            client = await self.clients.get()
            text = await operation.arun(client)
        except HumanWireError as exc:
            # A service failure is a failed result the model adapts to; the run goes on.
            return error_result(tool_use, f"humanwire: {exc}"), exc
        return text_result(tool_use, text), None

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        result, error = await self.call(tool_use)
        yield ToolResultEvent(result, exception=error)


def _windows(wait_time: float | None, follow_up_time: float | None) -> dict[str, float]:
    windows: dict[str, float] = {}
    if wait_time is not None:
        windows["wait_time"] = wait_time
    if follow_up_time is not None:
        windows["follow_up_time"] = follow_up_time
    return windows


# --- messages ---------------------------------------------------------------------------


class MessageTool(HumanWireTool):
    """Send a text to one person over a channel; wait for the reply unless ``wait_time``
    is ``None`` (then only the interaction id comes back)."""

    channel: ClassVar[Channel]
    default_name: ClassVar[str]
    default_wait_time: ClassVar[float | None] = DEFAULT_WAIT_TIME

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        to: str | None = None,
        expose_recipient: bool = False,
        wait_time: float | Literal[_Unset.UNSET] | None = _UNSET,
        follow_up_time: float | None = None,
        from_: str | None = None,
        name: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if from_ is not None and self.channel == "whatsapp":
            raise ValueError("a WhatsApp message goes from the account's number: no from_")
        clients = ToolClients(client, async_client)
        chosen = self.default_wait_time if wait_time is _UNSET else wait_time
        self.wait_time = check_wait_time(chosen)
        self.follow_up_time = check_follow_up_time(follow_up_time)
        self.to = resolve_recipient(self.channel, to, clients.configured)
        self.expose_recipient = expose_recipient
        self.from_ = from_
        waits = self.wait_time is not None
        if description is None:
            description = (
                ask_description(self.channel, self.wait_time)
                if self.wait_time is not None
                else notify_description(self.channel)
            )
        super().__init__(
            name=name or self.default_name,
            description=description,
            schema=message_input_schema(
                note=not waits, channel=self.channel, expose_recipient=expose_recipient
            ),
            clients=clients,
            metadata=metadata,
        )

    def _finish(self, response: Any) -> str:
        if self.wait_time is None:
            return sent_text(response, self.channel)
        return message_text(response)

    def _operation(self, arguments: Any) -> Operation[Any, str]:
        to = getattr(arguments, "to", None)
        kwargs: dict[str, Any] = {
            "to": to if self.expose_recipient and to else self.to,
            "message": arguments.message,
            **_windows(self.wait_time, self.follow_up_time),
            **self._meta(),
        }
        if self.from_ is not None:
            kwargs["from_"] = self.from_
        return Operation(
            lambda client: getattr(client.messages, self.channel)(**kwargs), self._finish
        )


class AskHumanSMS(MessageTool):
    """Text a person by SMS and wait for the reply (``ask_human_sms``)."""

    channel: ClassVar[Channel] = "sms"
    default_name: ClassVar[str] = "ask_human_sms"


class AskHumanWhatsApp(MessageTool):
    """Message a person on WhatsApp and wait for the reply (``ask_human_whatsapp``)."""

    channel: ClassVar[Channel] = "whatsapp"
    default_name: ClassVar[str] = "ask_human_whatsapp"


class AskHumanSlack(MessageTool):
    """Message a person or channel on Slack and wait for a reply in the thread
    (``ask_human_slack``)."""

    channel: ClassVar[Channel] = "slack"
    default_name: ClassVar[str] = "ask_human_slack"


class NotifyHumanSMS(AskHumanSMS):
    """Send an SMS without waiting (``notify_human_sms``)."""

    default_name: ClassVar[str] = "notify_human_sms"
    default_wait_time: ClassVar[float | None] = None


class NotifyHumanWhatsApp(AskHumanWhatsApp):
    """Send a WhatsApp message without waiting (``notify_human_whatsapp``)."""

    default_name: ClassVar[str] = "notify_human_whatsapp"
    default_wait_time: ClassVar[float | None] = None


class NotifyHumanSlack(AskHumanSlack):
    """Send a Slack message without waiting (``notify_human_slack``)."""

    default_name: ClassVar[str] = "notify_human_slack"
    default_wait_time: ClassVar[float | None] = None


class AskHumanChannel(HumanWireTool):
    """Send through a channel card: the card holds the recipient, windows and templates,
    so the no-response text is the card's (``ask_human_channel``)."""

    def __init__(
        self,
        channel_id: str,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        name: str = "ask_human_channel",
        description: str = ASK_CHANNEL_DESCRIPTION,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if not channel_id:
            raise ValueError("channel_id: give the channel card's id")
        self.channel_id = channel_id
        super().__init__(
            name=name,
            description=description,
            schema=MessageInput,
            clients=ToolClients(client, async_client),
            metadata=metadata,
        )

    def _operation(self, arguments: Any) -> Operation[Any, str]:
        message, meta = arguments.message, self._meta()
        return Operation(
            lambda client: client.messages.channel(self.channel_id, message=message, **meta),
            message_text,
        )


# --- forms ------------------------------------------------------------------------------


class HumanForm(HumanWireTool):
    """Send a form link and wait for the submitted values (``human_form``).

    Fixed mode: give ``title`` and ``fields``; the model only supplies an optional link
    message. Dynamic mode: leave them out and the model designs the form (title, fields
    with types, options, required) through a flat schema. ``form_description`` is the
    form's subtitle (``description`` is the tool's, read by the model).
    """

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        channel: Channel = "sms",
        to: str | None = None,
        expose_recipient: bool = False,
        title: str | None = None,
        fields: Sequence[FormField | Mapping[str, Any]] | None = None,
        form_description: str | None = None,
        submit_label: str | None = None,
        brand_image_url: str | None = None,
        message: str | None = None,
        wait_time: float | None = DEFAULT_WAIT_TIME,
        follow_up_time: float | None = None,
        name: str = "human_form",
        description: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if channel not in CHANNEL_NAMES:
            raise ValueError("channel must be sms, whatsapp or slack")
        if (title is None) != (fields is None):
            raise ValueError("a fixed form needs both title and fields (or neither: dynamic)")
        if fields is not None and not fields:
            raise ValueError("fields: a form needs at least one field")
        self.wait_time = check_wait_time(wait_time)
        self.follow_up_time = check_follow_up_time(follow_up_time)
        if self.wait_time is None and self.follow_up_time is None:
            raise ValueError("a form needs wait_time, follow_up_time or both")
        clients = ToolClients(client, async_client)
        self.channel: Channel = channel
        self.to = resolve_recipient(channel, to, clients.configured)
        self.expose_recipient = expose_recipient
        self.title = title
        self.fields = (
            None
            if fields is None
            else [f if isinstance(f, FormField) else FormField.model_validate(f) for f in fields]
        )
        self.form_description = form_description
        self.submit_label = submit_label
        self.brand_image_url = brand_image_url
        self.message = message
        if description is None:
            labels = None if self.fields is None else [field.label for field in self.fields]
            description = describe_form(channel, self.wait_time, title=title, labels=labels)
        super().__init__(
            name=name,
            description=description,
            schema=form_input_schema(
                dynamic=self.dynamic, channel=channel, expose_recipient=expose_recipient
            ),
            clients=clients,
            metadata=metadata,
        )

    @property
    def dynamic(self) -> bool:
        return self.fields is None

    def _request(self, arguments: Any) -> dict[str, Any]:
        if self.dynamic:
            # The model's design: an InvalidRequestError tells it what to fix.
            form_fields = form_fields_from_specs(list(arguments.fields or []))
            title, subtitle = arguments.title, getattr(arguments, "description", None)
        else:
            form_fields, title = list(self.fields or []), self.title
            subtitle = self.form_description
        to = getattr(arguments, "to", None)
        kwargs: dict[str, Any] = {
            "to": to if self.expose_recipient and to else self.to,
            "title": title,
            "fields": form_fields,
            **_windows(self.wait_time, self.follow_up_time),
        }
        optional = {
            "description": subtitle,
            "submit_label": self.submit_label,
            "brand_image_url": self.brand_image_url,
        }
        if self.channel != "whatsapp":
            optional["message"] = with_link(getattr(arguments, "message", None) or self.message)
        kwargs.update({key: value for key, value in optional.items() if value is not None})
        return kwargs

    @staticmethod
    def _finish(response: Any) -> str:
        return form_text(response, submitted_prefix="The human submitted the form:\n")

    def _operation(self, arguments: Any) -> Operation[Any, str]:
        kwargs = {**self._request(arguments), **self._meta()}
        return Operation(lambda client: getattr(client.forms, self.channel)(**kwargs), self._finish)


# --- calls ------------------------------------------------------------------------------


class CallHuman(HumanWireTool):
    """Place a voice call driven by a prompt and return its summary (``call_human``).

    The recipient is a phone number: ``to``, else ``HUMANWIRE_SMS_TO``, else (embedded
    service) the inbox's default human. ``transfer_to``, ``language``, ``voice`` and
    ``wait_for_call_end`` are fixed at construction.
    """

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        to: str | None = None,
        expose_recipient: bool = False,
        transfer_to: str | None = None,
        language: str = "en-US",
        voice: Voice = "female",
        wait_for_call_end: bool = True,
        name: str = "call_human",
        description: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        clients = ToolClients(client, async_client)
        self.to = resolve_recipient("sms", to, clients.configured)
        # The wire model checks the numbers, language and voice now, not at the first call.
        CallRequest(
            prompt="check", to=self.to, transfer_to=transfer_to, language=language, voice=voice
        )
        self.expose_recipient = expose_recipient
        self.transfer_to = transfer_to
        self.language = language
        self.voice: Voice = voice
        self.wait_for_call_end = wait_for_call_end
        super().__init__(
            name=name,
            description=description or call_description(wait_for_call_end),
            schema=CallWithRecipientInput if expose_recipient else CallInput,
            clients=clients,
            metadata=metadata,
        )

    def _operation(self, arguments: Any) -> Operation[Any, str]:
        to = getattr(arguments, "to", None)
        kwargs: dict[str, Any] = {
            "to": to if self.expose_recipient and to else self.to,
            "prompt": arguments.prompt,
            "language": self.language,
            "voice": self.voice,
            "wait_for_call_end": self.wait_for_call_end,
            **self._meta(),
        }
        if self.transfer_to is not None:
            kwargs["transfer_to"] = self.transfer_to
        return Operation(lambda client: client.calls.create(**kwargs), call_text)


# --- interactions -----------------------------------------------------------------------


class CheckHumanInteraction(HumanWireTool):
    """The status and result of an earlier interaction, a late reply included
    (``check_human_interaction``). ``wait`` holds the check up to that many seconds
    (at most 60) for a change."""

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        wait: float = 0,
        name: str = "check_human_interaction",
        description: str = CHECK_DESCRIPTION,
    ) -> None:
        if isinstance(wait, bool) or not 0 <= wait <= 60:
            raise ValueError("wait must be from 0 to 60 seconds")
        self.wait = wait
        super().__init__(
            name=name,
            description=description,
            schema=CheckInteractionInput,
            clients=ToolClients(client, async_client),
        )

    def _operation(self, arguments: Any) -> Operation[Any, str]:
        wait, interaction_id = self.wait or None, arguments.interaction_id
        return Operation(
            lambda client: client.interactions.status(interaction_id, wait=wait), describe_status
        )
