"""``HumanWireToolSpec``: every channel, the form, the call and the status check as
LlamaIndex tools, each with a sync and an async function.

Each operation is described once (an ``Operation``: the client call and how its response
becomes the text the model reads); the sync function runs it on ``HumanWire``, the async
one on ``AsyncHumanWire``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from llama_index.core.tools import FunctionTool, ToolMetadata
from llama_index.core.tools.tool_spec.base import SPEC_FUNCTION_TYPE, BaseToolSpec
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_core import PydanticCustomError

from humanwire._tooling import (
    ASK_CHANNEL_DESCRIPTION,
    CALL_PROMPT,
    CHANNEL_NAMES,
    CHECK_DESCRIPTION,
    EMAIL_TO,
    FORM_DESCRIPTION,
    FORM_FIELDS,
    FORM_MESSAGE,
    FORM_TITLE,
    INTERACTION_ID,
    MESSAGE,
    NOTE,
    PHONE_TO,
    SLACK_TO,
    FormFieldList,
    FormFieldSpec,
    Operation,
    OptionalText,
    ask_description,
    call_description,
    call_text,
    describe_status,
    form_description,
    form_fields_from_specs,
    form_text,
    message_text,
    optional_text,
    sent_text,
    with_link,
)
from humanwire.approval import (
    MESSAGE_RECIPIENT_ENV,
    RECIPIENT_ENV,
    check_follow_up_time,
    check_wait_time,
    resolve_recipient,
)
from humanwire.errors import invalid_request
from humanwire.types import (
    CallRequest,
    CallResponse,
    FormField,
    FormResponse,
    InteractionStatus,
    MessageResponse,
    check_metadata,
)

from ._tools import HumanWireFunctionTool

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = ["DEFAULT_WAIT_TIME", "HumanWireToolSpec", "describe_status"]

TextChannel = Literal["sms", "whatsapp", "slack", "email"]
FormChannel = Literal["sms", "whatsapp", "slack", "email"]
_CHANNELS: tuple[TextChannel, ...] = ("sms", "whatsapp", "slack", "email")
_ARGS_NAMES = {**CHANNEL_NAMES, "email": "Email"}
"""How a channel is written in an argument model's name."""
_RECIPIENT_TEXT = {"sms": PHONE_TO, "whatsapp": PHONE_TO, "slack": SLACK_TO, "email": EMAIL_TO}

DEFAULT_WAIT_TIME = 300
"""Seconds an ``ask_*`` tool holds the request open for the answer, unless told."""

_CHECK_PHONE = "+12025550100"
"""Any valid number: the call options are checked at construction with it."""


class _Args(BaseModel):
    # Unknown arguments are refused so a model learns the real parameters.
    model_config = ConfigDict(extra="forbid")


def _args(name: str, **fields: Any) -> type[BaseModel]:
    return cast(type[BaseModel], create_model(name, __base__=_Args, **fields))


@dataclass(frozen=True)
class _Tool:
    name: str
    sync: str
    async_: str
    description: str
    schema: type[BaseModel]
    channels: tuple[TextChannel, ...] = ()
    """The recipients the tool needs (the model may pick among several: notify)."""


class HumanWireToolSpec(BaseToolSpec):
    """Tools that reach a human through humanwire and return what they answered.

    Recipients are fixed here, not chosen by the model: ``to`` (a phone number, used for
    sms, whatsapp and calls), ``whatsapp_to``, ``slack_to`` and ``email_to`` override per
    channel; left out, each comes from ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` /
    ``HUMANWIRE_SLACK_TO`` / ``HUMANWIRE_EMAIL_TO``, else (embedded service) the inbox's
    default human. ``ask_human_email`` is offered only when email has a recipient. They are
    resolved here, once; ``to_tool_list()`` refuses a tool whose recipient is missing
    (naming the variable to set) and offers ``notify_human`` only the channels that have
    one. With ``expose_recipients=True`` the tools take an optional ``to`` the model may
    fill.

    ``form_fields`` (with ``form_title``) fixes the form ``ask_human_form`` sends; without
    them the model designs the form. ``channel_id`` adds ``ask_human_channel`` for a
    channel card. ``to_tool_list()`` returns every tool; pass ``spec_functions`` (names of
    the sync functions) to pick some. ``metadata`` (string keys and values, docs/design.md
    "Metadata") goes with every send and comes back on its status and events.
    """

    spec_functions: list[SPEC_FUNCTION_TYPE] = [  # noqa: RUF012 (BaseToolSpec's protocol)
        ("ask_human_sms", "aask_human_sms"),
        ("ask_human_whatsapp", "aask_human_whatsapp"),
        ("ask_human_slack", "aask_human_slack"),
        ("ask_human_email", "aask_human_email"),
        ("ask_human_channel", "aask_human_channel"),
        ("notify_human", "anotify_human"),
        ("ask_human_form", "aask_human_form"),
        ("call_human", "acall_human"),
        ("check_human_interaction", "acheck_human_interaction"),
    ]

    def __init__(
        self,
        client: HumanWire | None = None,
        *,
        async_client: AsyncHumanWire | None = None,
        to: str | None = None,
        whatsapp_to: str | None = None,
        slack_to: str | None = None,
        email_to: str | None = None,
        expose_recipients: bool = False,
        wait_time: float = DEFAULT_WAIT_TIME,
        follow_up_time: float | None = None,
        channel_id: str | None = None,
        form_channel: FormChannel = "sms",
        form_title: str | None = None,
        form_fields: Sequence[FormField | Mapping[str, Any]] | None = None,
        form_description: str | None = None,
        transfer_to: str | None = None,
        language: str = "en-US",
        voice: Literal["female", "male"] = "female",
        wait_for_call_end: bool = True,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if form_channel not in _CHANNELS:
            raise ValueError(
                f"form_channel must be sms, whatsapp, slack or email, got {form_channel!r}"
            )
        if wait_time is None:
            raise ValueError("wait_time is required: the ask tools wait for the answer")
        self.wait_time = cast(float, check_wait_time(wait_time))
        self.follow_up_time = check_follow_up_time(follow_up_time)
        self._client = client
        self._async_client = async_client
        self.expose_recipients = expose_recipients
        self.channel_id = channel_id
        self.form_channel: FormChannel = form_channel
        self.form_title = form_title
        self.form_description = form_description
        self.form_fields: list[FormField] | None = None
        if form_fields is not None:
            if not form_title:
                raise ValueError("form_fields needs a form_title")
            self.form_fields = [FormField.model_validate(f) for f in form_fields]
        # The wire model checks the call options now, not at the model's first call.
        CallRequest(
            prompt="check", to=_CHECK_PHONE, transfer_to=transfer_to, language=language, voice=voice
        )
        self.transfer_to = transfer_to
        try:
            # Every send carries it (docs/design.md "Metadata"); checked now, not at the first call.
            self.metadata = check_metadata(metadata) if metadata is not None else None
        except PydanticCustomError as exc:
            raise ValueError(f"metadata: {exc}") from None
        self.language = language
        self.voice: Literal["female", "male"] = voice
        self.wait_for_call_end = wait_for_call_end
        self._recipients: dict[str, str | None] = {}
        self._missing: dict[str, str] = {}
        configured = {
            "sms": to,
            "whatsapp": whatsapp_to or to,
            "slack": slack_to,
            "email": email_to,
        }
        for channel in _CHANNELS:
            try:
                self._recipients[channel] = resolve_recipient(
                    channel, configured[channel], client or async_client
                )
            except ValueError as exc:
                self._recipients[channel] = None
                self._missing[channel] = str(exc)
        left_out = set()
        if channel_id is None:
            left_out.add("ask_human_channel")
        if self._recipients["email"] is None and not expose_recipients:
            # Email is newer than the other channels: offered once it has a recipient, so
            # a tool list that needed none before does not start refusing.
            left_out.add("ask_human_email")
        if left_out:
            self.spec_functions = [
                pair for pair in type(self).spec_functions if pair[0] not in left_out
            ]
        self._tools = {tool.sync: tool for tool in self._tool_table()}

    # --- clients and recipients ---------------------------------------------------------

    @property
    def client(self) -> HumanWire:
        """The sync client: the one given, else one for the async client's service."""
        from humanwire._client import sync_client_for

        self._client = sync_client_for(self._client, self._async_client)
        return self._client

    @property
    def async_client(self) -> AsyncHumanWire:
        """The async client: the one given, else one for the sync client's service."""
        from humanwire._client import async_client_for

        self._async_client = async_client_for(self._client, self._async_client)
        return self._async_client

    def _recipient(self, channel: TextChannel, to: str | None) -> str:
        if to is not None and not self.expose_recipients:
            raise invalid_request(
                "the recipient is fixed for this tool: leave 'to' out", field="to"
            )
        recipient = to or self._recipients[channel]
        if recipient is None:
            if self.expose_recipients:  # the model can fix it
                raise invalid_request(f"no default {channel} recipient: give 'to'", field="to")
            raise ValueError(self._missing[channel])
        return recipient

    def _windows(self) -> dict[str, Any]:
        return {"wait_time": self.wait_time, "follow_up_time": self.follow_up_time}

    def _metadata(self) -> dict[str, Any]:
        return {"metadata": self.metadata} if self.metadata else {}

    # --- the operations, each written once ----------------------------------------------

    def _ask(self, channel: TextChannel, message: str, to: str | None) -> Operation[Any, str]:
        kwargs = {
            "message": message,
            "to": self._recipient(channel, to),
            **self._windows(),
            **self._metadata(),
        }
        return Operation(lambda client: getattr(client.messages, channel)(**kwargs), message_text)

    def _notify(self, message: str, channel: str, to: str | None) -> Operation[Any, str]:
        if channel not in _CHANNELS:
            raise invalid_request("channel must be sms, whatsapp, slack or email", field="channel")
        kwargs = {"message": message, "to": self._recipient(channel, to), **self._metadata()}

        def finish(response: MessageResponse) -> str:
            return sent_text(response, channel)

        return Operation(lambda client: getattr(client.messages, channel)(**kwargs), finish)

    def _channel(self, message: str) -> Operation[MessageResponse, str]:
        if self.channel_id is None:
            raise ValueError("ask_human_channel needs channel_id=... on HumanWireToolSpec")
        channel_id, extra = self.channel_id, self._metadata()
        return Operation(
            lambda client: client.messages.channel(channel_id, message=message, **extra),
            message_text,
        )

    def _form(
        self,
        title: str | None,
        fields: Sequence[FormFieldSpec | Mapping[str, Any]] | None,
        description: str | None,
        message: str | None,
        to: str | None,
    ) -> Operation[FormResponse, str]:
        if self.form_fields is not None:
            if title is not None or fields is not None or description is not None:
                raise invalid_request(
                    "this form is fixed: send it without title, fields or description",
                    field="fields",
                )
            title, checked = self.form_title, self.form_fields
            description = self.form_description
        elif not title:
            raise invalid_request("a form needs a title", field="title")
        else:
            # The model's design: an InvalidRequestError tells it what to fix.
            checked = form_fields_from_specs(list(fields or []))
        kwargs: dict[str, Any] = {
            "to": self._recipient(self.form_channel, to),
            "title": title,
            "fields": checked,
            **self._windows(),
            **self._metadata(),
        }
        if description:
            kwargs["description"] = description
        if self.form_channel != "whatsapp" and message:
            kwargs["message"] = with_link(message)
        channel = self.form_channel
        return Operation(lambda client: getattr(client.forms, channel)(**kwargs), form_text)

    def _call(self, prompt: str, to: str | None) -> Operation[CallResponse, str]:
        kwargs: dict[str, Any] = {
            "prompt": prompt,
            "to": self._recipient("sms", to),
            "language": self.language,
            "voice": self.voice,
            "wait_for_call_end": self.wait_for_call_end,
            **self._metadata(),
        }
        if self.transfer_to is not None:
            kwargs["transfer_to"] = self.transfer_to
        return Operation(lambda client: client.calls.create(**kwargs), call_text)

    def _check(self, interaction_id: str) -> Operation[InteractionStatus, str]:
        return Operation(lambda client: client.interactions.status(interaction_id), describe_status)

    # --- the functions the tools call: thin, sync and async -----------------------------

    def ask_human_sms(self, message: str, to: str | None = None) -> str:
        """Text a person by SMS and wait for their reply."""
        return self._ask("sms", message, to).run(self.client)

    async def aask_human_sms(self, message: str, to: str | None = None) -> str:
        return await self._ask("sms", message, to).arun(self.async_client)

    def ask_human_whatsapp(self, message: str, to: str | None = None) -> str:
        """Message a person on WhatsApp and wait for their reply."""
        return self._ask("whatsapp", message, to).run(self.client)

    async def aask_human_whatsapp(self, message: str, to: str | None = None) -> str:
        return await self._ask("whatsapp", message, to).arun(self.async_client)

    def ask_human_slack(self, message: str, to: str | None = None) -> str:
        """Message a person on Slack and wait for their reply in the thread."""
        return self._ask("slack", message, to).run(self.client)

    async def aask_human_slack(self, message: str, to: str | None = None) -> str:
        return await self._ask("slack", message, to).arun(self.async_client)

    def ask_human_email(self, message: str, to: str | None = None) -> str:
        """Email a person and wait for their reply to it."""
        return self._ask("email", message, to).run(self.client)

    async def aask_human_email(self, message: str, to: str | None = None) -> str:
        return await self._ask("email", message, to).arun(self.async_client)

    def ask_human_channel(self, message: str) -> str:
        """Send through the configured channel card and return what it answers."""
        return self._channel(message).run(self.client)

    async def aask_human_channel(self, message: str) -> str:
        return await self._channel(message).arun(self.async_client)

    def notify_human(
        self, message: str, channel: TextChannel = "sms", to: str | None = None
    ) -> str:
        """Send a message without waiting for an answer."""
        return self._notify(message, channel, to).run(self.client)

    async def anotify_human(
        self, message: str, channel: TextChannel = "sms", to: str | None = None
    ) -> str:
        return await self._notify(message, channel, to).arun(self.async_client)

    def ask_human_form(
        self,
        title: str | None = None,
        fields: Sequence[FormFieldSpec | Mapping[str, Any]] | None = None,
        description: str | None = None,
        message: str | None = None,
        to: str | None = None,
    ) -> str:
        """Send a web form link and wait for the submitted values."""
        return self._form(title, fields, description, message, to).run(self.client)

    async def aask_human_form(
        self,
        title: str | None = None,
        fields: Sequence[FormFieldSpec | Mapping[str, Any]] | None = None,
        description: str | None = None,
        message: str | None = None,
        to: str | None = None,
    ) -> str:
        return await self._form(title, fields, description, message, to).arun(self.async_client)

    def call_human(self, prompt: str, to: str | None = None) -> str:
        """Place a voice call and return how it went."""
        return self._call(prompt, to).run(self.client)

    async def acall_human(self, prompt: str, to: str | None = None) -> str:
        return await self._call(prompt, to).arun(self.async_client)

    def check_human_interaction(self, interaction_id: str) -> str:
        """Look up whether an earlier message, form or call has been answered."""
        return self._check(interaction_id).run(self.client)

    async def acheck_human_interaction(self, interaction_id: str) -> str:
        return await self._check(interaction_id).arun(self.async_client)

    # --- tools --------------------------------------------------------------------------

    def _to_field(self, channel: str) -> dict[str, Any]:
        if not self.expose_recipients:
            return {}
        return {"to": (OptionalText, optional_text(_RECIPIENT_TEXT[channel]))}

    def _notify_channels(self) -> tuple[TextChannel, ...]:
        """The channels ``notify_human`` offers: those with a recipient (all of them when
        the model may name one)."""
        if self.expose_recipients:
            return _CHANNELS
        return tuple(c for c in _CHANNELS if self._recipients[c] is not None)

    def _form_tool(self) -> _Tool:
        link: dict[str, Any] = {}
        if self.form_channel != "whatsapp":  # whatsapp wraps the link in fixed text
            link["message"] = (OptionalText, optional_text(FORM_MESSAGE))
        to = self._to_field(self.form_channel)
        if self.form_fields is not None:
            labels = [f.label for f in self.form_fields]
            schema = _args("AskHumanFixedFormArgs", **link, **to)
            text = form_description(
                self.form_channel, self.wait_time, title=self.form_title, labels=labels
            )
        else:
            schema = _args(
                "AskHumanFormArgs",
                title=(str, Field(min_length=1, description=FORM_TITLE)),
                fields=(FormFieldList, Field(min_length=1, max_length=30, description=FORM_FIELDS)),
                description=(OptionalText, optional_text(FORM_DESCRIPTION)),
                **link,
                **to,
            )
            text = form_description(self.form_channel, self.wait_time)
        return _Tool(
            "ask_human_form",
            "ask_human_form",
            "aask_human_form",
            text,
            schema,
            (self.form_channel,),
        )

    def _tool_table(self) -> list[_Tool]:
        question = (str, Field(min_length=1, description=MESSAGE))

        def ask(channel: TextChannel) -> _Tool:
            schema = _args(
                f"AskHuman{_ARGS_NAMES[channel]}Args",
                message=question,
                **self._to_field(channel),
            )
            return _Tool(
                f"ask_human_{channel}",
                f"ask_human_{channel}",
                f"aask_human_{channel}",
                ask_description(channel, self.wait_time),
                schema,
                (channel,),
            )

        notify_channels = self._notify_channels() or ("sms",)
        channel_type: Any = Literal.__getitem__(notify_channels)  # type: ignore[attr-defined]
        return [
            ask("sms"),
            ask("whatsapp"),
            ask("slack"),
            ask("email"),
            _Tool(
                "ask_human_channel",
                "ask_human_channel",
                "aask_human_channel",
                ASK_CHANNEL_DESCRIPTION,
                _args("AskHumanChannelArgs", message=question),
            ),
            _Tool(
                "notify_human",
                "notify_human",
                "anotify_human",
                "Send a human a one-way message (a status update, a result) without waiting "
                "for any answer. Returns at once with the interaction id.",
                _args(
                    "NotifyHumanArgs",
                    message=(str, Field(min_length=1, description=NOTE)),
                    channel=(
                        channel_type,
                        Field(
                            default=notify_channels[0],
                            description=f"Where to send it: {', '.join(notify_channels)}.",
                        ),
                    ),
                    **self._to_field("sms"),
                ),
                self._notify_channels(),
            ),
            self._form_tool(),
            _Tool(
                "call_human",
                "call_human",
                "acall_human",
                call_description(self.wait_for_call_end),
                _args(
                    "CallHumanArgs",
                    prompt=(str, Field(min_length=1, description=CALL_PROMPT)),
                    **self._to_field("sms"),
                ),
                ("sms",),
            ),
            _Tool(
                "check_human_interaction",
                "check_human_interaction",
                "acheck_human_interaction",
                CHECK_DESCRIPTION,
                _args(
                    "CheckHumanInteractionArgs",
                    interaction_id=(str, Field(min_length=1, description=INTERACTION_ID)),
                ),
            ),
        ]

    def _check_recipients(self, tool: _Tool) -> None:
        """A tool whose recipient is missing is refused now, naming the variable, rather
        than failing when the model first calls it."""
        if self.expose_recipients:
            return
        if tool.name == "notify_human":
            if self._notify_channels():
                return
            names = {**RECIPIENT_ENV, **MESSAGE_RECIPIENT_ENV}
            variables = ", ".join(names[c] for c in _CHANNELS)
            raise ValueError(
                f"notify_human needs a recipient on some channel: pass to=... or set one of "
                f"{variables}, or leave the tool out with to_tool_list(spec_functions=[...])"
            )
        for channel in tool.channels:
            if self._recipients[channel] is None:
                raise ValueError(
                    f"{tool.name}: {self._missing[channel]}; or leave the tool out with "
                    "to_tool_list(spec_functions=[...])"
                )

    def to_tool_list(
        self,
        spec_functions: list[SPEC_FUNCTION_TYPE] | None = None,
        func_to_metadata_mapping: dict[str, ToolMetadata] | None = None,
    ) -> list[FunctionTool]:
        """The tools, with their model-facing descriptions and argument schemas.

        ``spec_functions`` picks tools by name (the sync function's name, or a pair).
        A service error becomes an error output (``ToolOutput.is_error``), never an
        exception; a human who does not answer is a normal output. A tool whose recipient
        is missing raises ``ValueError`` here, naming the variable to set.
        """
        chosen = spec_functions or self.spec_functions
        mapping = func_to_metadata_mapping or {}
        tools: list[FunctionTool] = []
        for spec in chosen:
            name = spec if isinstance(spec, str) else spec[0]
            if name not in self._tools:
                raise ValueError(f"unknown humanwire tool {name!r}: one of {sorted(self._tools)}")
            tool = self._tools[name]
            self._check_recipients(tool)
            metadata = mapping.get(name) or ToolMetadata(
                name=tool.name, description=tool.description, fn_schema=tool.schema
            )
            tools.append(
                HumanWireFunctionTool(
                    fn=getattr(self, tool.sync),
                    async_fn=getattr(self, tool.async_),
                    metadata=metadata,
                )
            )
        return tools
