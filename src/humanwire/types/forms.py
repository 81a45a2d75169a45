"""Forms defined inline in a request: fields, options, validation rules, and the
request bodies of ``/forms/sms``, ``/forms/slack`` and ``/forms/whatsapp``."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ._base import (
    E164,
    DeliveryStatus,
    FollowUpTime,
    HttpUrl,
    RequestModel,
    ResponseModel,
    SlackId,
    SlackWorkspaceId,
    WaitTime,
    schema_pattern,
)
from ._metadata import Metadata

__all__ = [
    "DEFAULT_FORM_FOLLOW_UP_TIME",
    "DEFAULT_FORM_MESSAGE",
    "FIELD_TYPES",
    "FieldOption",
    "FieldType",
    "Form",
    "FormField",
    "FormResponse",
    "SMSFormRequest",
    "SlackFormRequest",
    "ValidationRule",
    "WhatsAppFormRequest",
    "WhatsAppOwnNumberFormRequest",
    "WhatsAppSharedFormRequest",
    "WhatsAppTemplate",
]

FieldType = Literal["text", "textarea", "email", "phone_number", "select", "checkbox", "address"]
FIELD_TYPES: tuple[str, ...] = FieldType.__args__  # type: ignore[attr-defined]

DEFAULT_FORM_MESSAGE = "Please fill out this form: {{url}}"
DEFAULT_FORM_FOLLOW_UP_TIME = 90

_FIELD_ID = re.compile(r"[A-Za-z0-9_-]+")
_VALIDATED_TYPES = ("text", "textarea", "email", "phone_number")


class FieldOption(RequestModel):
    """One choice of a ``select``: ``label`` is shown, ``value`` comes back."""

    label: str
    value: str


class ValidationRule(RequestModel):
    """A regular expression the input must match (search semantics: anchor it with
    ``^…$``); ``title`` is shown under the field when it does not."""

    title: str
    # "regex" is ECMA 262's dialect; the service compiles the pattern as Python's ``re``.
    pattern: str = Field(json_schema_extra={"format": "regex"})

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise PydanticCustomError(
                "invalid_request",
                "pattern is not a valid regular expression: {reason}",
                {"reason": str(exc)},
            ) from None
        return value


class FormField(RequestModel):
    # ``options`` only on (and required by) a select; ``validations`` only on the text
    # types: said to the schema too, as the validator below enforces them.
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "if": {"properties": {"type": {"const": "select"}}},
                    "then": {
                        "required": ["options"],
                        "properties": {"options": {"type": "array", "minItems": 1}},
                    },
                    "else": {"properties": {"options": {"type": "null"}}},
                },
                {
                    "if": {"properties": {"type": {"enum": list(_VALIDATED_TYPES)}}},
                    "else": {"properties": {"validations": {"type": "null"}}},
                },
            ]
        }
    )

    id: str = Field(json_schema_extra={"pattern": schema_pattern(_FIELD_ID)})
    label: str
    type: FieldType
    required: bool = False
    placeholder: str | None = None
    helper_text: str | None = None
    options: list[FieldOption] | None = None
    validations: list[ValidationRule] | None = None

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not _FIELD_ID.fullmatch(value):
            raise PydanticCustomError(
                "invalid_request",
                "field id must be letters, digits, hyphens and underscores, got '{value}'",
                {"value": value},
            )
        return value

    @field_validator("type", mode="before")
    @classmethod
    def _camel_phone(cls, value: Any) -> Any:
        # The spec's prose writes phoneNumber, its schema phone_number: take both.
        return "phone_number" if value == "phoneNumber" else value

    @model_validator(mode="after")
    def _options_and_validations(self) -> FormField:
        if self.type == "select" and not self.options:
            raise PydanticCustomError(
                "invalid_request",
                "options: a select field needs at least one option",
                {"field": "options"},
            )
        if self.type != "select" and self.options is not None:
            raise PydanticCustomError(
                "invalid_request",
                "options: only a select field takes options, not a {type} field",
                {"field": "options", "type": self.type},
            )
        if self.validations is not None and self.type not in _VALIDATED_TYPES:
            raise PydanticCustomError(
                "invalid_request",
                "validations: only text, textarea, email and phone_number fields take "
                "validations, not a {type} field",
                {"field": "validations", "type": self.type},
            )
        return self


class Form(RequestModel):
    """What every form request shares: the form itself and its windows."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": [name], "properties": {name: {"type": "number"}}}
                for name in ("waitTime", "followUpTime")
            ]
        }
    )

    title: str
    fields: list[FormField] = Field(min_length=1)
    description: str | None = None
    brand_image_url: HttpUrl | None = None
    submit_label: str | None = None
    wait_time: WaitTime | None = None
    follow_up_time: FollowUpTime | None = None

    @model_validator(mode="after")
    def _form_rules(self) -> Form:
        seen: set[str] = set()
        for index, form_field in enumerate(self.fields):
            if form_field.id in seen:
                raise PydanticCustomError(
                    "invalid_request",
                    "duplicate field id '{id}': field ids must be unique within a form",
                    {"field": f"fields[{index}].id", "id": form_field.id},
                )
            seen.add(form_field.id)
        if self.wait_time is None and self.follow_up_time is None:
            raise PydanticCustomError(
                "invalid_request",
                "a form needs waitTime, followUpTime or both",
                {"field": "waitTime"},
            )
        return self

    @property
    def effective_follow_up_time(self) -> float:
        """``followUpTime`` as the service applies it: 90 s when only ``waitTime`` is set."""
        if self.follow_up_time is not None:
            return float(self.follow_up_time)
        return float(DEFAULT_FORM_FOLLOW_UP_TIME)


class SMSFormRequest(Form):
    """``POST /forms/sms``: the link goes out in a text; ``message`` may hold ``{{url}}``."""

    to: E164
    message: str | None = None
    metadata: Metadata | None = None


class SlackFormRequest(Form):
    """``POST /forms/slack``: the body of ``/forms/sms`` with a slack id in ``to`` and the
    optional workspace ``from`` of ``/messages/slack``."""

    to: SlackId
    message: str | None = None
    from_: SlackWorkspaceId | None = Field(default=None, alias="from")
    metadata: Metadata | None = None


class WhatsAppTemplate(RequestModel):
    """A template approved by the messaging platform operator."""

    id: str
    variables: dict[str, str] = Field(default_factory=dict)


class WhatsAppSharedFormRequest(Form):
    """``POST /forms/whatsapp`` from the shared account: fixed wrapper text."""

    to: E164
    metadata: Metadata | None = None


class WhatsAppOwnNumberFormRequest(Form):
    """``POST /forms/whatsapp`` from the account's own whatsapp number."""

    to: E164
    from_: E164 = Field(alias="from")
    template: WhatsAppTemplate
    metadata: Metadata | None = None


def _whatsapp_variant(value: Any) -> str:
    if isinstance(value, dict):
        own = "template" in value or "from" in value or "from_" in value
    else:
        own = isinstance(value, WhatsAppOwnNumberFormRequest)
    return "own_number" if own else "shared"


WhatsAppFormRequest = Annotated[
    Annotated[WhatsAppSharedFormRequest, Tag("shared")]
    | Annotated[WhatsAppOwnNumberFormRequest, Tag("own_number")],
    Discriminator(_whatsapp_variant),
]
"""Either whatsapp form variant, told apart by ``template`` / ``from``."""


class FormResponse(ResponseModel):
    """What a form request returns.

    Submitted inside ``waitTime``: ``responded`` with ``values`` and ``content``.
    Not submitted: ``responded`` false and ``response`` carries the no-response text.
    Only ``followUpTime`` given: returns at once, ``status`` ``pending``.
    """

    interaction_id: str
    status: Literal["pending", "ended"]
    form_url: str | None = None
    responded: bool | None = None
    values: dict[str, str] | None = None
    content: str | None = None
    response: str | None = None
    delivery_status: DeliveryStatus | None = None
    metadata: dict[str, str] | None = None

    @property
    def text(self) -> str:
        """The text an agent should see: the submitted summary, or the no-response text."""
        if self.responded and self.content is not None:
            return self.content
        if self.response is not None:
            return self.response
        return f"Form sent ({self.form_url}); interaction {self.interaction_id} is {self.status}."
