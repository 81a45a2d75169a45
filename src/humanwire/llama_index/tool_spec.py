"""``HumanWireToolSpec``: every channel, the form, the call and the status check as
LlamaIndex tools, each with a sync and an async function."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from llama_index.core.tools import FunctionTool, ToolMetadata
from llama_index.core.tools.tool_spec.base import SPEC_FUNCTION_TYPE, BaseToolSpec
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from humanwire.approval import check_follow_up_time, check_wait_time, resolve_recipient
from humanwire.errors import error_from_validation, invalid_request
from humanwire.types import (
    CallConversationEndedEvent,
    FormField,
    FormReceivedEvent,
    InteractionStatus,
    MessageReceivedEvent,
)

from ._tools import HumanWireFunctionTool

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = ["DEFAULT_WAIT_TIME", "HumanWireToolSpec", "describe_status"]

TextChannel = Literal["sms", "whatsapp", "slack"]
FormChannel = Literal["sms", "whatsapp", "slack"]

DEFAULT_WAIT_TIME = 300
"""Seconds an ``ask_*`` tool holds the request open for the answer, unless told."""

_URL_PLACEHOLDER = "{{url}}"

# --- what the model reads -------------------------------------------------------------

_MESSAGE = (
    "The text the human receives. Write it so it stands alone: say who you are, what you "
    "need and why, and ask one clear question they can answer in a short reply."
)
_NOTE = (
    "The text the human receives. Nothing is waited for, so do not ask a question: use "
    "this for updates, results and heads-ups."
)
_PHONE_TO = (
    "Recipient phone number in E.164 form, e.g. +14155550123. Leave it out to reach the "
    "configured default person."
)
_SLACK_TO = (
    "Slack member ID (starts with U or W) or channel ID (starts with C). Leave it out to "
    "reach the configured default person."
)
_CHANNEL = "Where to send it: sms, whatsapp or slack."
_FORM_TITLE = "Title shown at the top of the form, e.g. 'Confirm the delivery address'."
_FORM_FIELDS = (
    "The inputs of the form, in order. Each needs id (letters, digits, - and _; the key of "
    "the returned value), label and type: text, textarea, email, phone_number, select (with "
    "options: [{label, value}]), checkbox or address. Optional: required, placeholder, "
    "helperText, validations ([{title, pattern}], a regex the input must match)."
)
_FORM_DESCRIPTION = "Optional subtitle below the title: what the form is for."
_FORM_MESSAGE = (
    "Optional short text sent with the link, e.g. 'Please confirm your order'. The link is "
    "added to it. Ignored on whatsapp, where the text is fixed."
)
_CALL_PROMPT = (
    "Everything the voice agent placing the call knows: who it calls on behalf of, the "
    "goal, what to do for the likely answers, and what to say on voicemail."
)
_INTERACTION_ID = "The interactionId returned by an earlier message, form or call."


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


def describe_status(status: InteractionStatus) -> str:
    """An interaction's state as a sentence for a model."""
    head = f"Interaction {status.interaction_id} ({status.kind} by {status.channel})"
    result = status.result
    if isinstance(result, MessageReceivedEvent):
        return f"{head} was answered. Human response: {result.payload.body}"
    if isinstance(result, FormReceivedEvent):
        values = "\n".join(f"{key}: {value}" for key, value in result.payload.values.items())
        return f"{head}: the form was submitted.\n{values}"
    if isinstance(result, CallConversationEndedEvent):
        return f"{head}: the call ended. Summary: {result.payload.summary}"
    if status.ended:
        return f"{head} ended without a response from the human."
    return f"{head} is still pending: no response yet. Check again later."


class HumanWireToolSpec(BaseToolSpec):
    """Tools that reach a human through humanwire and return what they answered.

    Recipients are fixed here, not chosen by the model: ``to`` (a phone number, used for
    sms, whatsapp and calls), ``whatsapp_to`` and ``slack_to`` override per channel; left
    out, each comes from ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` /
    ``HUMANWIRE_SLACK_TO``, else (embedded service) the inbox's default human. With
    ``expose_recipients=True`` the tools take an optional ``to`` the model may fill.

    ``form_fields`` (with ``form_title``) fixes the form ``ask_human_form`` sends; without
    them the model designs the form. ``channel_id`` adds ``ask_human_channel`` for a
    channel card. ``to_tool_list()`` returns every tool; pass ``spec_functions`` (names of
    the sync functions) to pick some.
    """

    spec_functions: list[SPEC_FUNCTION_TYPE] = [  # noqa: RUF012 (BaseToolSpec's protocol)
        ("ask_human_sms", "aask_human_sms"),
        ("ask_human_whatsapp", "aask_human_whatsapp"),
        ("ask_human_slack", "aask_human_slack"),
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
    ) -> None:
        if form_channel not in ("sms", "whatsapp", "slack"):
            raise ValueError(f"form_channel must be sms, whatsapp or slack, got {form_channel!r}")
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
        self.transfer_to = transfer_to
        self.language = language
        self.voice: Literal["female", "male"] = voice
        self.wait_for_call_end = wait_for_call_end
        self._configured_to: dict[str, str | None] = {
            "sms": to,
            "whatsapp": whatsapp_to or to,
            "slack": slack_to,
        }
        if channel_id is None:
            self.spec_functions = [
                pair for pair in type(self).spec_functions if pair[0] != "ask_human_channel"
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
        # Either client tells where requests go; resolved per call so a spec made for
        # sms does not need a slack recipient.
        client = self._client or self._async_client
        return resolve_recipient(channel, to or self._configured_to[channel], client)

    def _windows(self) -> dict[str, Any]:
        return {"wait_time": self.wait_time, "follow_up_time": self.follow_up_time}

    # --- messages -----------------------------------------------------------------------

    def ask_human_sms(self, message: str, to: str | None = None) -> str:
        """Text a person by SMS and wait for their reply."""
        recipient = self._recipient("sms", to)
        return self.client.messages.sms(message=message, to=recipient, **self._windows()).text

    async def aask_human_sms(self, message: str, to: str | None = None) -> str:
        recipient = self._recipient("sms", to)
        response = await self.async_client.messages.sms(
            message=message, to=recipient, **self._windows()
        )
        return response.text

    def ask_human_whatsapp(self, message: str, to: str | None = None) -> str:
        """Message a person on WhatsApp and wait for their reply."""
        recipient = self._recipient("whatsapp", to)
        response = self.client.messages.whatsapp(message=message, to=recipient, **self._windows())
        return response.text

    async def aask_human_whatsapp(self, message: str, to: str | None = None) -> str:
        recipient = self._recipient("whatsapp", to)
        response = await self.async_client.messages.whatsapp(
            message=message, to=recipient, **self._windows()
        )
        return response.text

    def ask_human_slack(self, message: str, to: str | None = None) -> str:
        """Message a person on Slack and wait for their reply in the thread."""
        recipient = self._recipient("slack", to)
        return self.client.messages.slack(message=message, to=recipient, **self._windows()).text

    async def aask_human_slack(self, message: str, to: str | None = None) -> str:
        recipient = self._recipient("slack", to)
        response = await self.async_client.messages.slack(
            message=message, to=recipient, **self._windows()
        )
        return response.text

    def _channel_id(self) -> str:
        if self.channel_id is None:
            raise ValueError("ask_human_channel needs channel_id=... on HumanWireToolSpec")
        return self.channel_id

    def ask_human_channel(self, message: str) -> str:
        """Send through the configured channel card and return what it answers."""
        return self.client.messages.channel(self._channel_id(), message=message).text

    async def aask_human_channel(self, message: str) -> str:
        response = await self.async_client.messages.channel(self._channel_id(), message=message)
        return response.text

    def notify_human(
        self, message: str, channel: TextChannel = "sms", to: str | None = None
    ) -> str:
        """Send a message without waiting for an answer."""
        recipient = self._recipient(self._text_channel(channel), to)
        send = getattr(self.client.messages, channel)
        return cast(str, send(message=message, to=recipient).text)

    async def anotify_human(
        self, message: str, channel: TextChannel = "sms", to: str | None = None
    ) -> str:
        recipient = self._recipient(self._text_channel(channel), to)
        send = getattr(self.async_client.messages, channel)
        response = await send(message=message, to=recipient)
        return cast(str, response.text)

    @staticmethod
    def _text_channel(channel: str) -> TextChannel:
        if channel not in ("sms", "whatsapp", "slack"):
            raise invalid_request("channel must be sms, whatsapp or slack", field="channel")
        return cast(TextChannel, channel)

    # --- form ---------------------------------------------------------------------------

    def _form_kwargs(
        self,
        title: str | None,
        fields: Sequence[FormField | Mapping[str, Any]] | None,
        description: str | None,
        message: str | None,
        to: str | None,
    ) -> dict[str, Any]:
        if self.form_fields is not None:
            if title is not None or fields is not None or description is not None:
                raise invalid_request(
                    "this form is fixed: send it without title, fields or description",
                    field="fields",
                )
            title, fields, description = self.form_title, self.form_fields, self.form_description
        elif not title or not fields:
            raise invalid_request("a form needs a title and at least one field", field="fields")
        try:
            checked = [FormField.model_validate(f) for f in fields]
        except ValidationError as exc:
            raise error_from_validation(exc) from None
        kwargs: dict[str, Any] = {
            "to": self._recipient(self.form_channel, to),
            "title": title,
            "fields": checked,
            **self._windows(),
        }
        if description:
            kwargs["description"] = description
        if message and self.form_channel != "whatsapp":
            kwargs["message"] = (
                message if _URL_PLACEHOLDER in message else f"{message} {_URL_PLACEHOLDER}"
            )
        return kwargs

    def ask_human_form(
        self,
        title: str | None = None,
        fields: Sequence[FormField | Mapping[str, Any]] | None = None,
        description: str | None = None,
        message: str | None = None,
        to: str | None = None,
    ) -> str:
        """Send a web form link and wait for the submitted values."""
        kwargs = self._form_kwargs(title, fields, description, message, to)
        return cast(str, getattr(self.client.forms, self.form_channel)(**kwargs).text)

    async def aask_human_form(
        self,
        title: str | None = None,
        fields: Sequence[FormField | Mapping[str, Any]] | None = None,
        description: str | None = None,
        message: str | None = None,
        to: str | None = None,
    ) -> str:
        kwargs = self._form_kwargs(title, fields, description, message, to)
        response = await getattr(self.async_client.forms, self.form_channel)(**kwargs)
        return cast(str, response.text)

    # --- call and status ----------------------------------------------------------------

    def _call_kwargs(self, prompt: str, to: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "prompt": prompt,
            "to": self._recipient("sms", to),
            "language": self.language,
            "voice": self.voice,
            "wait_for_call_end": self.wait_for_call_end,
        }
        if self.transfer_to is not None:
            kwargs["transfer_to"] = self.transfer_to
        return kwargs

    def call_human(self, prompt: str, to: str | None = None) -> str:
        """Place a voice call and return how it went."""
        kwargs = self._call_kwargs(prompt, to)
        return self.client.calls.create(**kwargs).text

    async def acall_human(self, prompt: str, to: str | None = None) -> str:
        kwargs = self._call_kwargs(prompt, to)
        response = await self.async_client.calls.create(**kwargs)
        return response.text

    def check_human_interaction(self, interaction_id: str) -> str:
        """Look up whether an earlier message, form or call has been answered."""
        return describe_status(self.client.interactions.status(interaction_id))

    async def acheck_human_interaction(self, interaction_id: str) -> str:
        return describe_status(await self.async_client.interactions.status(interaction_id))

    # --- tools --------------------------------------------------------------------------

    def _to_field(self, description: str) -> dict[str, Any]:
        if not self.expose_recipients:
            return {}
        return {"to": (str | None, Field(default=None, description=description))}

    def _tool_table(self) -> list[_Tool]:
        wait = f"Waits up to {self.wait_time:g} seconds"
        no_reply = (
            "If nobody answers in time it returns a note saying so: continue without the "
            "answer rather than asking again at once."
        )

        def ask(channel: str, to_text: str) -> type[BaseModel]:
            return _args(
                f"AskHuman{channel}Args",
                message=(str, Field(description=_MESSAGE)),
                **self._to_field(to_text),
            )

        if self.form_fields is not None:
            form_schema = _args(
                "AskHumanFixedFormArgs",
                message=(str | None, Field(default=None, description=_FORM_MESSAGE)),
                **self._to_field(_SLACK_TO if self.form_channel == "slack" else _PHONE_TO),
            )
            shown = ", ".join(f.label for f in self.form_fields)
            form_text = (
                f"Send a person the form '{self.form_title}' ({shown}) as a link by "
                f"{self.form_channel} and return what they submit, one 'label: value' line "
                f"per field. {wait} for the submission. {no_reply}"
            )
        else:
            form_schema = _args(
                "AskHumanFormArgs",
                title=(str, Field(description=_FORM_TITLE)),
                fields=(list[FormField], Field(min_length=1, description=_FORM_FIELDS)),
                description=(str | None, Field(default=None, description=_FORM_DESCRIPTION)),
                message=(str | None, Field(default=None, description=_FORM_MESSAGE)),
                **self._to_field(_SLACK_TO if self.form_channel == "slack" else _PHONE_TO),
            )
            form_text = (
                f"Design a web form and send it to a person as a link by {self.form_channel}; "
                "returns what they submit, one 'label: value' line per field. Use it when "
                "you need several structured answers at once (choices, addresses, emails, "
                f"phone numbers, yes/no). {wait} for the submission. {no_reply}"
            )
        call_end = (
            "Waits for the call to end and returns its summary (or 'human did not respond')."
            if self.wait_for_call_end
            else "Returns at once with an interactionId; use check_human_interaction later."
        )
        tools = [
            _Tool(
                "ask_human_sms",
                "ask_human_sms",
                "aask_human_sms",
                f"Text a person by SMS and wait for their reply. {wait}. Returns "
                f"'Human response: <their reply>'. {no_reply}",
                ask("SMS", _PHONE_TO),
            ),
            _Tool(
                "ask_human_whatsapp",
                "ask_human_whatsapp",
                "aask_human_whatsapp",
                f"Message a person on WhatsApp and wait for their reply. {wait}. Returns "
                f"'Human response: <their reply>'. {no_reply}",
                ask("WhatsApp", _PHONE_TO),
            ),
            _Tool(
                "ask_human_slack",
                "ask_human_slack",
                "aask_human_slack",
                f"Message a person on Slack and wait for their reply in the thread. {wait}. "
                f"Returns 'Human response: <their reply>'. {no_reply}",
                ask("Slack", _SLACK_TO),
            ),
            _Tool(
                "ask_human_channel",
                "ask_human_channel",
                "aask_human_channel",
                "Send a message to the person behind the configured channel and wait for "
                "their answer as that channel is set up. Returns their response, or a note "
                "that they did not respond.",
                _args("AskHumanChannelArgs", message=(str, Field(description=_MESSAGE))),
            ),
            _Tool(
                "notify_human",
                "notify_human",
                "anotify_human",
                "Send a person a message without waiting for any answer (status updates, "
                "results). Returns at once with the interactionId.",
                _args(
                    "NotifyHumanArgs",
                    message=(str, Field(description=_NOTE)),
                    channel=(TextChannel, Field(default="sms", description=_CHANNEL)),
                    **self._to_field(f"{_PHONE_TO} For slack: {_SLACK_TO}"),
                ),
            ),
            _Tool("ask_human_form", "ask_human_form", "aask_human_form", form_text, form_schema),
            _Tool(
                "call_human",
                "call_human",
                "acall_human",
                f"Phone a person: a voice agent makes the call following your prompt. {call_end}",
                _args(
                    "CallHumanArgs",
                    prompt=(str, Field(description=_CALL_PROMPT)),
                    **self._to_field(_PHONE_TO),
                ),
            ),
            _Tool(
                "check_human_interaction",
                "check_human_interaction",
                "acheck_human_interaction",
                "Check whether an earlier message, form or call (by its interactionId) has "
                "been answered, and read the answer if so.",
                _args(
                    "CheckHumanInteractionArgs",
                    interaction_id=(str, Field(description=_INTERACTION_ID)),
                ),
            ),
        ]
        return tools

    def to_tool_list(
        self,
        spec_functions: list[SPEC_FUNCTION_TYPE] | None = None,
        func_to_metadata_mapping: dict[str, ToolMetadata] | None = None,
    ) -> list[FunctionTool]:
        """The tools, with their model-facing descriptions and argument schemas.

        ``spec_functions`` picks tools by name (the sync function's name, or a pair).
        A service error becomes an error output (``ToolOutput.is_error``), never an
        exception; a human who does not answer is a normal output.
        """
        chosen = spec_functions or self.spec_functions
        mapping = func_to_metadata_mapping or {}
        tools: list[FunctionTool] = []
        for spec in chosen:
            name = spec if isinstance(spec, str) else spec[0]
            if name not in self._tools:
                raise ValueError(f"unknown humanwire tool {name!r}: one of {sorted(self._tools)}")
            tool = self._tools[name]
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
