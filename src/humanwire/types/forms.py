"""Forms defined inline in a request: fields, options, validation rules, and the
request bodies of ``/forms/sms``, ``/forms/slack`` and ``/forms/whatsapp``."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ._base import (
    E164,
    FALLBACK_SCHEMA,
    WAIT_AND_RECIPIENT_SCHEMA,
    WAIT_OR_FOLLOW_UP_SCHEMA,
    Addressed,
    DeliveryStatus,
    DiscordIdOrPerson,
    E164OrPerson,
    EmailAddressOrPerson,
    EmailSubject,
    FallbackAfter,
    FallsBack,
    FollowUpTime,
    HttpUrl,
    RequestModel,
    ResponseModel,
    SlackIdOrPerson,
    SlackWorkspaceId,
    TeamsIdOrPerson,
    TelegramChatIdOrPerson,
    WaitTime,
    schema_pattern,
)
from ._metadata import Metadata
from ._pattern import PatternError, compiled_pattern, re2_source
from .people import PersonInsteadOfTo

__all__ = [
    "DEFAULT_FORM_FOLLOW_UP_TIME",
    "DEFAULT_FORM_MESSAGE",
    "FIELD_TYPES",
    "FORM_PATTERN_BUDGET",
    "MAX_FORM_PATTERN_CHARS",
    "MAX_FORM_RULES",
    "STORED_FORM",
    "DiscordFormRequest",
    "EmailFormRequest",
    "FieldOption",
    "FieldType",
    "Form",
    "FormField",
    "FormResponse",
    "SMSFormRequest",
    "SlackFormRequest",
    "TeamsFormRequest",
    "TelegramFormRequest",
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

MAX_FORM_RULES = 50
"""Most validation rules one form may carry, all fields together."""
MAX_FORM_PATTERN_CHARS = 10_000
"""Most characters a form's patterns may have together (each at most 1,000)."""
FORM_PATTERN_BUDGET = 50_000
"""Most RE2 program instructions a form's patterns may compile to together (``^.{0,1000}$``
takes about 22,000): bounds what creating the form and checking an answer cost."""
STORED_FORM = "stored_form"
"""Validation context key: ``{STORED_FORM: True}`` parses a form the service stored when
it was sent. Its patterns were checked then, or, stored before the pattern dialect,
are left unapplied by the page and the service alike rather than making the form fail."""


def _stored(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get(STORED_FORM))


class FieldOption(RequestModel):
    """One choice of a ``select``: ``label`` is shown, ``value`` comes back."""

    label: str
    value: str


class ValidationRule(RequestModel):
    """A regular expression the input must match (search semantics: anchor it with
    ``^…$``); ``title`` is shown under the field when it does not.

    The pattern is JavaScript's ``RegExp`` syntax with the ``u`` flag, limited to what the
    service's linear-time engine (RE2) reads the same way; anything else is refused with
    the reason (``humanwire.types._pattern`` lists both)."""

    title: str
    # "regex" is ECMA 262's dialect: the service takes the part of it RE2 reads alike.
    pattern: str = Field(json_schema_extra={"format": "regex"})

    @field_validator("pattern")
    @classmethod
    def _in_dialect(cls, value: str, info: ValidationInfo) -> str:
        if _stored(info):
            return value
        try:
            re2_source(value)
        except PatternError as exc:
            raise PydanticCustomError(
                "invalid_request", "pattern {reason}", {"reason": str(exc)}
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

    model_config = ConfigDict(json_schema_extra=WAIT_OR_FOLLOW_UP_SCHEMA)

    title: str
    fields: list[FormField] = Field(min_length=1)
    description: str | None = None
    brand_image_url: HttpUrl | None = None
    submit_label: str | None = None
    wait_time: WaitTime | None = None
    follow_up_time: FollowUpTime | None = None

    @model_validator(mode="before")
    @classmethod
    def _rule_count(cls, data: Any, info: ValidationInfo) -> Any:
        # Counted before any pattern is parsed: a body full of rules costs nothing more.
        fields = data.get("fields") if isinstance(data, dict) else None
        if _stored(info) or not isinstance(fields, list):
            return data
        count = chars = 0
        for index, form_field in enumerate(fields):
            rules = form_field.get("validations") if isinstance(form_field, dict) else None
            for rule in rules if isinstance(rules, list) else ():
                count += 1
                pattern = rule.get("pattern") if isinstance(rule, dict) else None
                chars += len(pattern) if isinstance(pattern, str) else 0
            if count > MAX_FORM_RULES or chars > MAX_FORM_PATTERN_CHARS:
                raise PydanticCustomError(
                    "invalid_request",
                    "validations: a form takes at most {rules} validation rules, their "
                    "patterns {chars} characters, in all",
                    {
                        "field": f"fields[{index}].validations",
                        "rules": MAX_FORM_RULES,
                        "chars": f"{MAX_FORM_PATTERN_CHARS:,}",
                    },
                )
        return data

    @model_validator(mode="after")
    def _form_rules(self, info: ValidationInfo) -> Form:
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
        if not _stored(info):
            self._check_pattern_sizes()
        return self

    def _check_pattern_sizes(self) -> None:
        """Compiles each pattern (RE2, within its memory budget) and refuses the one that
        takes the form past ``FORM_PATTERN_BUDGET``: compiling stops there."""
        total = 0
        for index, form_field in enumerate(self.fields):
            for rule_index, rule in enumerate(form_field.validations or ()):
                path = f"fields[{index}].validations[{rule_index}].pattern"
                try:
                    total += compiled_pattern(rule.pattern).program_size
                except PatternError as exc:
                    raise PydanticCustomError(
                        "invalid_request", "pattern {reason}", {"field": path, "reason": str(exc)}
                    ) from None
                if total > FORM_PATTERN_BUDGET:
                    raise PydanticCustomError(
                        "invalid_request",
                        "pattern takes this form's patterns past what one form may hold "
                        "(their repetitions make too big a program together)",
                        {"field": path},
                    )

    @property
    def effective_follow_up_time(self) -> float:
        """``followUpTime`` as the service applies it: 90 s when only ``waitTime`` is set."""
        if self.follow_up_time is not None:
            return float(self.follow_up_time)
        return float(DEFAULT_FORM_FOLLOW_UP_TIME)


class _AddressedForm(Form, Addressed, FallsBack):
    """A form sent to ``to`` or to a ``person`` (with ``fallbackAfter``, on their next
    address too when the form is not submitted by then)."""

    model_config = ConfigDict(json_schema_extra={**WAIT_AND_RECIPIENT_SCHEMA, **FALLBACK_SCHEMA})

    fallback_after: FallbackAfter | None = None
    """With ``person``: seconds after which, the form not submitted, its message (its
    link, or its card where the channel renders forms) goes to the person's next
    confirmed address on this channel (and again after as many more, address by
    address); a submission from any of them answers this one interaction. No next
    address, or the form's window closing first: nothing moves (docs/people.md)."""


class SMSFormRequest(_AddressedForm):
    """``POST /forms/sms``: the link goes out in a text; ``message`` may hold ``{{url}}``."""

    to: E164OrPerson = None
    person: PersonInsteadOfTo = None
    message: str | None = None
    metadata: Metadata | None = None


class SlackFormRequest(_AddressedForm):
    """``POST /forms/slack``: the body of ``/forms/sms`` with a slack id in ``to`` and the
    optional workspace ``from`` of ``/messages/slack``."""

    to: SlackIdOrPerson = None
    person: PersonInsteadOfTo = None
    message: str | None = None
    from_: SlackWorkspaceId | None = Field(default=None, alias="from")
    metadata: Metadata | None = None


class TelegramFormRequest(_AddressedForm):
    """``POST /forms/telegram``: the body of ``/forms/sms`` with a chat id in ``to``; the
    form page's link goes out from the bot."""

    to: TelegramChatIdOrPerson = None
    person: PersonInsteadOfTo = None
    message: str | None = None
    metadata: Metadata | None = None


class DiscordFormRequest(_AddressedForm):
    """``POST /forms/discord``: the body of ``/forms/sms`` with a Discord user or channel
    id in ``to``; a form that fits one of Discord's modals (at most 5 text fields) is
    filled in Discord, any other by its page's link."""

    to: DiscordIdOrPerson = None
    person: PersonInsteadOfTo = None
    message: str | None = None
    metadata: Metadata | None = None


class TeamsFormRequest(_AddressedForm):
    """``POST /forms/teams``: the body of ``/forms/sms`` with a Teams user id in ``to``;
    a form whose fields all map onto Adaptive Card inputs (no address) goes out as a card
    of those inputs, its submit the form's submission; any other as its text with the
    page's link."""

    to: TeamsIdOrPerson = None
    person: PersonInsteadOfTo = None
    message: str | None = None
    metadata: Metadata | None = None


class EmailFormRequest(_AddressedForm):
    """``POST /forms/email``: the body of ``/forms/sms`` with an email address in ``to``
    and an optional ``subject``; ``message`` may hold ``{{url}}``."""

    to: EmailAddressOrPerson = None
    person: PersonInsteadOfTo = None
    subject: EmailSubject | None = None
    message: str | None = None
    metadata: Metadata | None = None


class WhatsAppTemplate(RequestModel):
    """A template approved by the messaging platform operator."""

    id: str
    variables: dict[str, str] = Field(default_factory=dict)


class WhatsAppSharedFormRequest(_AddressedForm):
    """``POST /forms/whatsapp`` from the shared account: fixed wrapper text."""

    to: E164OrPerson = None
    person: PersonInsteadOfTo = None
    metadata: Metadata | None = None


class WhatsAppOwnNumberFormRequest(_AddressedForm):
    """``POST /forms/whatsapp`` from the account's own whatsapp number."""

    to: E164OrPerson = None
    person: PersonInsteadOfTo = None
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
