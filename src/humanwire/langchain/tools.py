"""The humanwire tools: every channel, form and call as a LangChain ``BaseTool``.

Each tool describes its client call once (``_operation``); the base class runs it on the
sync client for ``invoke`` and on the async client for ``ainvoke``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.tools.base import ArgsSchema
from pydantic import Field, field_validator, model_validator

from humanwire import _tooling as shared
from humanwire._tooling import describe_status
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

from ._base import HumanWireBaseTool, WindowedTool
from ._schemas import (
    CallInput,
    CallWithRecipientInput,
    CheckInteractionInput,
    MessageInput,
    form_input_schema,
    message_input_schema,
)

__all__ = [
    "AskHumanChannel",
    "AskHumanEmail",
    "AskHumanSMS",
    "AskHumanSlack",
    "AskHumanWhatsApp",
    "CallHuman",
    "CheckHumanInteraction",
    "HumanForm",
    "NotifyHumanEmail",
    "NotifyHumanSMS",
    "NotifyHumanSlack",
    "NotifyHumanWhatsApp",
    "describe_status",
]

_CHANNEL_NAMES = shared.CHANNEL_NAMES

# --- messages ---------------------------------------------------------------------------


class _MessageTool(WindowedTool):
    """Send a text to one person over a channel; wait for the reply unless
    ``wait_time`` is ``None`` (then only the interaction id comes back)."""

    channel: ClassVar[shared.MessageChannel]

    description: str = ""
    args_schema: ArgsSchema | None = None
    to: str | None = None
    """The recipient; resolved at construction (see ``humanwire.langchain``)."""
    expose_recipient: bool = False
    """Let the model choose the recipient (adds an optional ``to`` argument)."""

    @model_validator(mode="after")
    def _configure(self) -> _MessageTool:
        self.to = resolve_recipient(self.channel, self.to, self.configured_client)
        waits = self.wait_time is not None
        if self.args_schema is None:
            self.args_schema = message_input_schema(
                note=not waits, channel=self.channel, expose_recipient=self.expose_recipient
            )
        if not self.description:
            self.description = self._describe()
        return self

    def _describe(self) -> str:
        if self.wait_time is None:
            return shared.notify_description(self.channel)
        return shared.ask_description(self.channel, self.wait_time)

    def _request(self, message: str, to: str | None) -> dict[str, Any]:
        return {
            "to": (to if self.expose_recipient and to else self.to),
            "message": message,
            **self.windows(),
        }

    def _finish(self, response: MessageResponse) -> tuple[str, MessageResponse]:
        if self.wait_time is None:
            return shared.sent_text(response, self.channel), response
        return shared.message_text(response), response

    def _operation(
        self, message: str, to: str | None = None
    ) -> shared.Operation[MessageResponse, tuple[str, MessageResponse]]:
        kwargs = {**self._request(message, to), **self.send_metadata()}
        return shared.Operation(
            lambda client: getattr(client.messages, self.channel)(**kwargs), self._finish
        )


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

    channel: ClassVar[shared.MessageChannel] = "sms"
    name: str = "ask_human_sms"


class AskHumanWhatsApp(_MessageTool):
    """Message a person on WhatsApp and wait for the reply."""

    channel: ClassVar[shared.MessageChannel] = "whatsapp"
    name: str = "ask_human_whatsapp"


class AskHumanSlack(_FromMixin):
    """Message a person or channel on Slack and wait for a reply in the thread."""

    channel: ClassVar[shared.MessageChannel] = "slack"
    name: str = "ask_human_slack"


class AskHumanEmail(_MessageTool):
    """Email a person and wait for their reply to it."""

    channel: ClassVar[shared.MessageChannel] = "email"
    name: str = "ask_human_email"


class NotifyHumanSMS(AskHumanSMS):
    """Send an SMS without waiting (``wait_time=None``)."""

    name: str = "notify_human_sms"
    wait_time: float | None = None


class NotifyHumanWhatsApp(AskHumanWhatsApp):
    name: str = "notify_human_whatsapp"
    wait_time: float | None = None


class NotifyHumanSlack(AskHumanSlack):
    name: str = "notify_human_slack"
    wait_time: float | None = None


class NotifyHumanEmail(AskHumanEmail):
    name: str = "notify_human_email"
    wait_time: float | None = None


class AskHumanChannel(HumanWireBaseTool):
    """Send through a channel card: the card holds the recipient, windows and templates,
    so the no-response text is the card's."""

    name: str = "ask_human_channel"
    description: str = shared.ASK_CHANNEL_DESCRIPTION
    args_schema: ArgsSchema | None = MessageInput
    channel_id: str = Field(min_length=1)

    def _operation(
        self, message: str
    ) -> shared.Operation[MessageResponse, tuple[str, MessageResponse]]:
        return shared.Operation(
            lambda client: client.messages.channel(
                self.channel_id, message=message, **self.send_metadata()
            ),
            lambda response: (shared.message_text(response), response),
        )


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
            self.description = self._describe()
        return self

    def _describe(self) -> str:
        if self.dynamic:
            return shared.form_description(self.channel, self.wait_time)
        labels = [field.label for field in self.fields or []]
        return shared.form_description(
            self.channel, self.wait_time, title=self.title, labels=labels
        )

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
            # The model's design: an InvalidRequestError tells it what to fix.
            form_fields = shared.form_fields_from_specs(list(fields or []))
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
            optional["message"] = shared.with_link(message or self.message)
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        return kwargs

    @staticmethod
    def _finish(response: FormResponse) -> tuple[str, FormResponse]:
        return shared.form_text(
            response, submitted_prefix="The human submitted the form:\n"
        ), response

    def _operation(
        self,
        message: str | None = None,
        to: str | None = None,
        title: str | None = None,
        fields: list[Any] | None = None,
        description: str | None = None,
    ) -> shared.Operation[FormResponse, tuple[str, FormResponse]]:
        kwargs = {**self._request(message, to, title, fields, description), **self.send_metadata()}
        return shared.Operation(
            lambda client: getattr(client.forms, self.channel)(**kwargs), self._finish
        )


# --- calls ------------------------------------------------------------------------------


class CallHuman(HumanWireBaseTool):
    """Place a voice call driven by a prompt and return its summary.

    The recipient is a phone number: ``to``, else ``HUMANWIRE_SMS_TO``, else (embedded
    service) the inbox's default human. ``transfer_to``, ``language``, ``voice`` and
    ``wait_for_call_end`` are fixed at construction.
    """

    name: str = "call_human"
    description: str = ""
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
        if not self.description:
            self.description = self._describe()
        return self

    def _describe(self) -> str:
        return shared.call_description(self.wait_for_call_end)

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

    def _operation(
        self, prompt: str, to: str | None = None
    ) -> shared.Operation[CallResponse, tuple[str, CallResponse]]:
        kwargs = {**self._request(prompt, to), **self.send_metadata()}
        return shared.Operation(
            lambda client: client.calls.create(**kwargs),
            lambda response: (shared.call_text(response), response),
        )


# --- interactions -----------------------------------------------------------------------


class CheckHumanInteraction(HumanWireBaseTool):
    """The status and result of an earlier interaction (a late reply included)."""

    name: str = "check_human_interaction"
    description: str = shared.CHECK_DESCRIPTION
    args_schema: ArgsSchema | None = CheckInteractionInput
    wait: float = Field(default=0, ge=0, le=60)
    """Seconds to hold the check for a change (the service's ``?wait=``, at most 60)."""

    def _operation(
        self, interaction_id: str
    ) -> shared.Operation[InteractionStatus, tuple[str, InteractionStatus]]:
        wait = self.wait or None
        return shared.Operation(
            lambda client: client.interactions.status(interaction_id, wait=wait),
            lambda status: (describe_status(status), status),
        )
