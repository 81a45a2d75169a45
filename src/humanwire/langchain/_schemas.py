"""The argument schemas the model reads. Their descriptions are written for a model."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from humanwire.types import FieldOption, FormField

__all__ = [
    "CallInput",
    "CallWithRecipientInput",
    "CheckInteractionInput",
    "FormFieldSpec",
    "MessageInput",
    "MessageWithPhoneInput",
    "MessageWithSlackInput",
    "NoInput",
    "NoInputWithPhone",
    "form_fields_from_specs",
    "form_input_schema",
]

_PHONE_TO = (
    "Recipient phone number in E.164 form, e.g. +14155550123. "
    "Leave it out to reach the default person."
)
_SLACK_TO = (
    "Slack member id (U…) or channel id (C…) to send to. Leave it out to reach the default person."
)


class MessageInput(BaseModel):
    message: str = Field(
        min_length=1,
        description=(
            "The text to send to the human. Make it self-contained: say who you are, "
            "what you need and what kind of answer you expect."
        ),
    )


class MessageWithPhoneInput(MessageInput):
    to: str | None = Field(default=None, description=_PHONE_TO)


class MessageWithSlackInput(MessageInput):
    to: str | None = Field(default=None, description=_SLACK_TO)


class NoInput(BaseModel):
    """A tool whose whole request is fixed at construction."""


class NoInputWithPhone(NoInput):
    to: str | None = Field(default=None, description=_PHONE_TO)


_FORM_MESSAGE = (
    "Optional short text sent with the form link. Put {{url}} where the link goes; "
    "without it the link is added for you."
)


class FormFieldSpec(BaseModel):
    """One input of the form."""

    label: str = Field(min_length=1, description="The question or label shown above the input.")
    type: Literal["text", "textarea", "email", "phone_number", "select", "checkbox", "address"] = (
        Field(
            default="text",
            description=(
                "text: one line; textarea: several lines; email; phone_number; "
                "select: one choice among options; checkbox: yes/no; address: postal address."
            ),
        )
    )
    id: str | None = Field(
        default=None,
        description=(
            "Short key of the answer in the result (letters, digits, _ and -). "
            "Derived from the label when left out."
        ),
    )
    required: bool = Field(default=False, description="Whether the person must fill it in.")
    options: list[str] | None = Field(
        default=None,
        description="The choices of a select field (required for select, ignored otherwise).",
    )
    placeholder: str | None = Field(default=None, description="Example text inside the input.")
    helper_text: str | None = Field(default=None, description="Hint shown below the input.")


def form_input_schema(*, dynamic: bool, channel: str, expose_recipient: bool) -> type[BaseModel]:
    """The arguments of a ``HumanForm``: the form itself when the model designs it, the
    link message on sms and slack (whatsapp wraps the link in fixed text), and the
    recipient only when exposed."""
    return _FORM_SCHEMAS[(dynamic, channel == "whatsapp", channel == "slack", expose_recipient)]


def _build_form_schema(dynamic: bool, whatsapp: bool, slack: bool, expose: bool) -> type[BaseModel]:
    definitions: dict[str, Any] = {}
    if dynamic:
        definitions["title"] = (str, Field(min_length=1, description="Title shown at the top."))
        definitions["fields"] = (
            list[FormFieldSpec],
            Field(
                min_length=1,
                max_length=30,
                description="The inputs of the form, in the order the person sees them.",
            ),
        )
        definitions["description"] = (
            str | None,
            Field(default=None, description="Optional subtitle explaining why you ask."),
        )
    if not whatsapp:
        definitions["message"] = (str | None, Field(default=None, description=_FORM_MESSAGE))
    if expose:
        definitions["to"] = (
            str | None,
            Field(default=None, description=_SLACK_TO if slack else _PHONE_TO),
        )
    name = ("DynamicForm" if dynamic else "FixedForm") + (
        "WhatsApp" if whatsapp else "Slack" if slack else "SMS"
    )
    name += "WithRecipientInput" if expose else "Input"
    model: type[BaseModel] = create_model(name, **definitions)
    return model


_FORM_SCHEMAS: dict[tuple[bool, bool, bool, bool], type[BaseModel]] = {
    (dynamic, whatsapp, slack, expose): _build_form_schema(dynamic, whatsapp, slack, expose)
    for dynamic in (False, True)
    for whatsapp, slack in ((False, False), (True, False), (False, True))
    for expose in (False, True)
}


class CallInput(BaseModel):
    prompt: str = Field(
        min_length=1,
        description=(
            "Everything the calling voice agent knows: who it calls as, the goal of the call, "
            "what to do for the likely answers, and a short voicemail message."
        ),
    )


class CallWithRecipientInput(CallInput):
    to: str | None = Field(default=None, description=_PHONE_TO)


class CheckInteractionInput(BaseModel):
    interaction_id: str = Field(
        min_length=1,
        description="The interaction id returned by an earlier message, form or call.",
    )


def _slug(label: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").lower()
    return slug[:40] or "field"


def form_fields_from_specs(specs: list[FormFieldSpec]) -> list[FormField]:
    """The model's field specs as wire form fields: ids derived and made unique, select
    options turned into label/value pairs, options on other types dropped.

    Raises ``ValueError`` with a message the model can act on (a select without options).
    """
    fields: list[FormField] = []
    seen: set[str] = set()
    for index, spec in enumerate(specs):
        base = spec.id if spec.id and re.fullmatch(r"[A-Za-z0-9_-]+", spec.id) else None
        field_id = base or _slug(spec.label)
        candidate, n = field_id, 2
        while candidate in seen:
            candidate, n = f"{field_id}_{n}", n + 1
        seen.add(candidate)
        options = None
        if spec.type == "select":
            choices = [o for o in (spec.options or []) if o.strip()]
            if not choices:
                raise ValueError(
                    f"fields[{index}] ({spec.label!r}) is a select field: give it options"
                )
            options = [FieldOption(label=o, value=o) for o in dict.fromkeys(choices)]
        fields.append(
            FormField(
                id=candidate,
                label=spec.label,
                type=spec.type,
                required=spec.required,
                options=options,
                placeholder=spec.placeholder or None,
                helper_text=spec.helper_text or None,
            )
        )
    return fields
