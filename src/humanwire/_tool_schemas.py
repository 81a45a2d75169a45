"""The argument schemas a model reads, shared by every adapter (LangChain, LlamaIndex, MCP):
descriptions written for a model, and plain JSON schemas (no ``$ref``, no ``anyOf``),
built from the pieces in ``humanwire._tooling``. Framework-neutral: pydantic only."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

from ._tooling import (
    CALL_PROMPT,
    DISCORD_TO,
    EMAIL_TO,
    FORM_DESCRIPTION,
    FORM_FIELDS,
    FORM_MESSAGE,
    FORM_TITLE,
    INTERACTION_ID,
    MESSAGE,
    NOTE,
    PERSON,
    PHONE_TO,
    SLACK_TO,
    TEAMS_TO,
    TELEGRAM_TO,
    FormFieldList,
    FormFieldSpec,
    OptionalText,
    form_fields_from_specs,
    optional_text,
)

__all__ = [
    "CallInput",
    "CallWithRecipientInput",
    "CheckInteractionInput",
    "FormFieldSpec",
    "MessageInput",
    "NoInput",
    "NoteInput",
    "form_fields_from_specs",
    "form_input_schema",
    "message_input_schema",
    "person_input_schema",
]


class MessageInput(BaseModel):
    message: str = Field(min_length=1, description=MESSAGE)


class NoteInput(BaseModel):
    message: str = Field(min_length=1, description=NOTE)


_RECIPIENTS = {
    "Phone": PHONE_TO,
    "Slack": SLACK_TO,
    "Email": EMAIL_TO,
    "Telegram": TELEGRAM_TO,
    "Teams": TEAMS_TO,
    "Discord": DISCORD_TO,
}
"""What a recipient is, by kind: how the model is told to write one."""


def _recipient_kind(channel: str) -> str:
    kinds = {
        "slack": "Slack",
        "email": "Email",
        "telegram": "Telegram",
        "teams": "Teams",
        "discord": "Discord",
    }
    return kinds.get(channel, "Phone")


def _recipient_field(kind: str) -> tuple[Any, Any]:
    return (OptionalText, optional_text(_RECIPIENTS[kind]))


def _build_message_schema(note: bool, kind: str, expose: bool) -> type[BaseModel]:
    base = NoteInput if note else MessageInput
    if not expose:
        return base
    name = ("Note" if note else "Message") + kind + "WithRecipientInput"
    model: type[BaseModel] = create_model(name, __base__=base, to=_recipient_field(kind))
    return model


_MESSAGE_SCHEMAS = {
    (note, kind, expose): _build_message_schema(note, kind, expose)
    for note in (False, True)
    for kind in _RECIPIENTS
    for expose in (False, True)
}


def message_input_schema(*, note: bool, channel: str, expose_recipient: bool) -> type[BaseModel]:
    """The arguments of a message tool: the text (a question, or a note when nothing is
    awaited) and the recipient only when exposed."""
    return _MESSAGE_SCHEMAS[(note, _recipient_kind(channel), expose_recipient)]


class MessagePersonInput(MessageInput):
    person: OptionalText = optional_text(PERSON)


class NotePersonInput(NoteInput):
    person: OptionalText = optional_text(PERSON)


def person_input_schema(*, note: bool, expose_recipient: bool) -> type[BaseModel]:
    """The arguments of a person tool: the text (a question, or a note when nothing is
    awaited) and the person's id only when exposed."""
    if not expose_recipient:
        return NoteInput if note else MessageInput
    return NotePersonInput if note else MessagePersonInput


class NoInput(BaseModel):
    """A tool whose whole request is fixed at construction."""


def form_input_schema(*, dynamic: bool, channel: str, expose_recipient: bool) -> type[BaseModel]:
    """The arguments of a ``HumanForm``: the form itself when the model designs it, the
    link message on sms and slack (whatsapp wraps the link in fixed text), and the
    recipient only when exposed."""
    kind = "WhatsApp" if channel == "whatsapp" else _recipient_kind(channel)
    return _FORM_SCHEMAS[(dynamic, kind, expose_recipient)]


def _build_form_schema(dynamic: bool, kind: str, expose: bool) -> type[BaseModel]:
    definitions: dict[str, Any] = {}
    if dynamic:
        definitions["title"] = (str, Field(min_length=1, description=FORM_TITLE))
        definitions["fields"] = (
            FormFieldList,
            Field(min_length=1, max_length=30, description=FORM_FIELDS),
        )
        definitions["description"] = (OptionalText, optional_text(FORM_DESCRIPTION))
    if kind != "WhatsApp":
        definitions["message"] = (OptionalText, optional_text(FORM_MESSAGE))
    if expose:
        definitions["to"] = _recipient_field("Phone" if kind == "WhatsApp" else kind)
    # The names of the models before email ("…SMS…" for a phone number) are kept.
    name = ("DynamicForm" if dynamic else "FixedForm") + ("SMS" if kind == "Phone" else kind)
    name += "WithRecipientInput" if expose else "Input"
    model: type[BaseModel] = create_model(name, **definitions)
    return model


_FORM_SCHEMAS: dict[tuple[bool, str, bool], type[BaseModel]] = {
    (dynamic, kind, expose): _build_form_schema(dynamic, kind, expose)
    for dynamic in (False, True)
    for kind in ("WhatsApp", *_RECIPIENTS)
    for expose in (False, True)
}


class CallInput(BaseModel):
    prompt: str = Field(min_length=1, description=CALL_PROMPT)


class CallWithRecipientInput(CallInput):
    to: OptionalText = optional_text(PHONE_TO)


class CheckInteractionInput(BaseModel):
    interaction_id: str = Field(min_length=1, description=INTERACTION_ID)
