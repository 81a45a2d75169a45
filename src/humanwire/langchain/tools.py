"""The humanwire tools: every channel, form and call as a LangChain ``BaseTool``."""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.tools.base import ArgsSchema
from pydantic import BaseModel, Field, field_validator, model_validator

from humanwire.approval import Channel, resolve_recipient
from humanwire.types import (
    CallRequest,
    CallResponse,
    FormField,
    FormResponse,
    InteractionStatus,
    MessageResponse,
    Voice,
)

from ._base import HumanWireBaseTool, WindowedTool, tool_error
from ._schemas import (
    CallInput,
    CallWithRecipientInput,
    CheckInteractionInput,
    FormFieldSpec,
    MessageInput,
    MessageWithPhoneInput,
    MessageWithSlackInput,
    form_fields_from_specs,
    form_input_schema,
)

__all__ = [
    "AskHumanChannel",
    "AskHumanSMS",
    "AskHumanSlack",
    "AskHumanWhatsApp",
    "CallHuman",
    "CheckHumanInteraction",
    "HumanForm",
    "NotifyHumanSMS",
    "NotifyHumanSlack",
    "NotifyHumanWhatsApp",
]

_CHANNEL_NAMES = {"sms": "SMS", "whatsapp": "WhatsApp", "slack": "Slack"}


def _recipient_schema(channel: str) -> type[BaseModel]:
    return MessageWithSlackInput if channel == "slack" else MessageWithPhoneInput


# --- messages ---------------------------------------------------------------------------


class _MessageTool(WindowedTool):
    """Send a text to one person over a channel; wait for the reply unless
    ``wait_time`` is ``None`` (then only the interaction id comes back)."""

    channel: ClassVar[Channel]

    args_schema: ArgsSchema | None = MessageInput
    to: str | None = None
    """The recipient; resolved at construction (see ``humanwire.langchain``)."""
    expose_recipient: bool = False
    """Let the model choose the recipient (adds an optional ``to`` argument)."""

    @model_validator(mode="after")
    def _resolve_recipient(self) -> _MessageTool:
        self.to = resolve_recipient(self.channel, self.to, self.configured_client)
        if self.expose_recipient and self.args_schema is MessageInput:
            self.args_schema = _recipient_schema(self.channel)
        return self

    def _request(self, message: str, to: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "to": (to if self.expose_recipient and to else self.to),
            "message": message,
            **self.windows(),
        }
        return kwargs

    def _result(self, response: MessageResponse) -> tuple[str, MessageResponse]:
        if self.wait_time is None:
            text = (
                f"Message sent by {self.channel} (interaction {response.interaction_id}); "
                "no reply is awaited."
            )
            if self.follow_up_time is not None:
                text += " A reply may still come later: check it with the interaction id."
            return text, response
        return response.text, response

    def _run(self, message: str, to: str | None = None) -> tuple[str, MessageResponse]:
        send = getattr(self.sync_client().messages, self.channel)
        kwargs = self._request(message, to)
        return self._result(self.call(lambda: send(**kwargs)))

    async def _arun(self, message: str, to: str | None = None) -> tuple[str, MessageResponse]:
        send = getattr(self.aclient().messages, self.channel)
        kwargs = self._request(message, to)
        return self._result(await self.acall(lambda: send(**kwargs)))


class _FromMixin(_MessageTool):
    from_: str | None = None
    """The sender: an sms number of the account, or the slack workspace id."""

    def _request(self, message: str, to: str | None) -> dict[str, Any]:
        kwargs = super()._request(message, to)
        if self.from_ is not None:
            kwargs["from_"] = self.from_
        return kwargs


class AskHumanSMS(_FromMixin):
    """Text a person by SMS and wait for the reply."""

    channel: ClassVar[Channel] = "sms"
    name: str = "ask_human_sms"
    description: str = (
        "Ask a human a question by SMS text message and wait for their reply. Use it when "
        "you need a decision, a fact or a confirmation only a person can give. Returns the "
        "human's reply, or a note that they did not respond in time (then continue without it)."
    )


class AskHumanWhatsApp(_MessageTool):
    """Message a person on WhatsApp and wait for the reply."""

    channel: ClassVar[Channel] = "whatsapp"
    name: str = "ask_human_whatsapp"
    description: str = (
        "Ask a human a question on WhatsApp and wait for their reply. Returns the human's "
        "reply, or a note that they did not respond in time (then continue without it)."
    )


class AskHumanSlack(_FromMixin):
    """Message a person or channel on Slack and wait for a reply in the thread."""

    channel: ClassVar[Channel] = "slack"
    name: str = "ask_human_slack"
    description: str = (
        "Ask a human a question on Slack and wait for their reply in the message thread. "
        "Returns the reply, or a note that nobody responded in time (then continue without it)."
    )


def _notify_description(channel: str) -> str:
    return (
        f"Send a human a one-way {_CHANNEL_NAMES[channel]} message (an update or a notice) "
        "without waiting for a reply. Returns the interaction id."
    )


class NotifyHumanSMS(AskHumanSMS):
    """Send an SMS without waiting (``wait_time=None``)."""

    name: str = "notify_human_sms"
    description: str = _notify_description("sms")
    wait_time: float | None = None


class NotifyHumanWhatsApp(AskHumanWhatsApp):
    name: str = "notify_human_whatsapp"
    description: str = _notify_description("whatsapp")
    wait_time: float | None = None


class NotifyHumanSlack(AskHumanSlack):
    name: str = "notify_human_slack"
    description: str = _notify_description("slack")
    wait_time: float | None = None


class AskHumanChannel(HumanWireBaseTool):
    """Send through a channel card: the card holds the recipient, windows and templates,
    so the no-response text is the card's."""

    name: str = "ask_human_channel"
    description: str = (
        "Send a message to a human through a configured channel and wait for their reply. "
        "Returns the reply, or a note that they did not respond in time."
    )
    args_schema: ArgsSchema | None = MessageInput
    channel_id: str = Field(min_length=1)

    def _run(self, message: str) -> tuple[str, MessageResponse]:
        channel = self.sync_client().messages.channel
        response = self.call(lambda: channel(self.channel_id, message=message))
        return response.text, response

    async def _arun(self, message: str) -> tuple[str, MessageResponse]:
        channel = self.aclient().messages.channel
        response = await self.acall(lambda: channel(self.channel_id, message=message))
        return response.text, response


# --- forms ------------------------------------------------------------------------------


class HumanForm(WindowedTool):
    """Send a form link and wait for the submitted values.

    Fixed mode — give ``title`` and ``fields`` at construction; the model only supplies an
    optional link message. Dynamic mode — leave them out and the model designs the form
    (title, fields with types, options, required) through a flat schema.
    """

    name: str = "human_form"
    description: str = ""
    args_schema: ArgsSchema | None = None

    channel: Channel = "sms"
    to: str | None = None
    expose_recipient: bool = False
    title: str | None = None
    fields: list[FormField] | None = None
    form_description: str | None = None
    """Subtitle of the fixed form (``description`` is the tool's, read by the model)."""
    submit_label: str | None = None
    brand_image_url: str | None = None
    message: str | None = None
    """Default link message on sms and slack (``{{url}}`` marks the link)."""

    @field_validator("channel")
    @classmethod
    def _known_channel(cls, value: str) -> str:
        if value not in _CHANNEL_NAMES:
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
        if self.args_schema is None:
            self.args_schema = form_input_schema(
                dynamic=self.dynamic, channel=self.channel, expose_recipient=self.expose_recipient
            )
        if not self.description:
            where = _CHANNEL_NAMES[self.channel]
            if self.dynamic:
                self.description = (
                    f"Ask a human to fill in a web form you design, sent as a link by {where}, "
                    "and wait for the answers. Use it to collect several structured answers at "
                    "once (choices, emails, phone numbers, yes/no). Returns the submitted "
                    "values, or a note that the human did not respond in time."
                )
            else:
                self.description = (
                    f"Send the human the form '{self.title}' as a link by {where} and wait for "
                    "the answers. Returns the submitted values, or a note that the human did "
                    "not respond in time."
                )
        return self

    @property
    def dynamic(self) -> bool:
        return self.fields is None

    def _request(
        self,
        message: str | None,
        to: str | None,
        title: str | None,
        fields: list[Any] | None,
        description: str | None,
    ) -> dict[str, Any]:
        if self.dynamic:
            try:
                specs = [FormFieldSpec.model_validate(f) for f in fields or []]
                form_fields = form_fields_from_specs(specs)
            except ValueError as exc:  # the model's design: tell it what to fix
                raise tool_error(exc) from exc
            form_title, form_description = title, description
        else:
            form_fields, form_title = list(self.fields or []), self.title
            form_description = self.form_description
        kwargs: dict[str, Any] = {
            "to": (to if self.expose_recipient and to else self.to),
            "title": form_title,
            "fields": form_fields,
            **self.windows(),
        }
        optional = {
            "description": form_description,
            "submit_label": self.submit_label,
            "brand_image_url": self.brand_image_url,
        }
        if self.channel != "whatsapp":
            link_message = message or self.message
            if link_message and "{{url}}" not in link_message:
                link_message = f"{link_message} {{{{url}}}}"
            optional["message"] = link_message
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        return kwargs

    @staticmethod
    def _result(response: FormResponse) -> tuple[str, FormResponse]:
        if response.responded and response.content is not None:
            return f"The human submitted the form:\n{response.content}", response
        return response.text, response

    def _run(
        self,
        message: str | None = None,
        to: str | None = None,
        title: str | None = None,
        fields: list[Any] | None = None,
        description: str | None = None,
    ) -> tuple[str, FormResponse]:
        send = getattr(self.sync_client().forms, self.channel)

        def go() -> FormResponse:
            return send(**self._request(message, to, title, fields, description))  # type: ignore[no-any-return]

        return self._result(self.call(go))

    async def _arun(
        self,
        message: str | None = None,
        to: str | None = None,
        title: str | None = None,
        fields: list[Any] | None = None,
        description: str | None = None,
    ) -> tuple[str, FormResponse]:
        send = getattr(self.aclient().forms, self.channel)

        async def go() -> FormResponse:
            return await send(**self._request(message, to, title, fields, description))  # type: ignore[no-any-return]

        return self._result(await self.acall(go))


# --- calls ------------------------------------------------------------------------------


class CallHuman(HumanWireBaseTool):
    """Place a voice call driven by a prompt and return its summary.

    The recipient is a phone number: ``to``, else ``HUMANWIRE_SMS_TO``, else (embedded
    service) the inbox's default human. ``transfer_to``, ``language``, ``voice`` and
    ``wait_for_call_end`` are fixed at construction.
    """

    name: str = "call_human"
    description: str = (
        "Phone a human: a voice agent places the call with your prompt and reports back. "
        "Returns the call summary, or a note that the human did not answer."
    )
    args_schema: ArgsSchema | None = CallInput
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
        if self.expose_recipient and self.args_schema is CallInput:
            self.args_schema = CallWithRecipientInput
        return self

    def _request(self, prompt: str, to: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "to": (to if self.expose_recipient and to else self.to),
            "prompt": prompt,
            "language": self.language,
            "voice": self.voice,
            "wait_for_call_end": self.wait_for_call_end,
        }
        if self.transfer_to is not None:
            kwargs["transfer_to"] = self.transfer_to
        return kwargs

    @staticmethod
    def _result(response: CallResponse) -> tuple[str, CallResponse]:
        if response.outcome == "no_answer":
            reason = response.error or "human did not respond"
            text = f"The human did not answer the call ({reason})."
        elif response.outcome == "transferred":
            text = f"The call was transferred to a human. Summary: {response.summary or ''}"
        elif response.outcome == "completed":
            text = f"Call completed. Summary: {response.summary or ''}"
        else:
            text = (
                f"Call placed; interaction {response.interaction_id} is {response.status}. "
                "Check its outcome later with the interaction id."
            )
        return text.strip(), response

    def _run(self, prompt: str, to: str | None = None) -> tuple[str, CallResponse]:
        create = self.sync_client().calls.create
        kwargs = self._request(prompt, to)
        return self._result(self.call(lambda: create(**kwargs)))

    async def _arun(self, prompt: str, to: str | None = None) -> tuple[str, CallResponse]:
        create = self.aclient().calls.create
        kwargs = self._request(prompt, to)
        return self._result(await self.acall(lambda: create(**kwargs)))


# --- interactions -----------------------------------------------------------------------


def describe_status(status: InteractionStatus) -> str:
    """An interaction's status as a sentence for the model."""
    what = f"Interaction {status.interaction_id} ({status.kind} by {status.channel})"
    result = status.result
    if result is None:
        if status.status == "pending":
            return f"{what} is still pending: no response yet."
        return f"{what} ended without a response."
    if result.event_type == "message.received":
        return f"{what} was answered. Human response: {result.payload.body}"
    if result.event_type == "form.received":
        lines = "\n".join(f"{key}: {value}" for key, value in result.payload.values.items())
        return f"{what}: the human submitted the form:\n{lines}"
    return f"{what}: the call ended. Summary: {result.payload.summary}"


class CheckHumanInteraction(HumanWireBaseTool):
    """The status and result of an earlier interaction (a late reply included)."""

    name: str = "check_human_interaction"
    description: str = (
        "Check whether a human has answered an earlier message, form or call, given its "
        "interaction id. Returns the answer if there is one, or says it is still pending."
    )
    args_schema: ArgsSchema | None = CheckInteractionInput
    wait: float = Field(default=0, ge=0, le=60)
    """Seconds to hold the check for a change (the service's ``?wait=``, at most 60)."""

    def _run(self, interaction_id: str) -> tuple[str, InteractionStatus]:
        status = self.sync_client().interactions.status
        wait = self.wait or None
        response = self.call(lambda: status(interaction_id, wait=wait))
        return describe_status(response), response

    async def _arun(self, interaction_id: str) -> tuple[str, InteractionStatus]:
        status = self.aclient().interactions.status
        wait = self.wait or None
        response = await self.acall(lambda: status(interaction_id, wait=wait))
        return describe_status(response), response
