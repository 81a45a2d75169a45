"""What the framework adapters share, written once.

- :class:`Operation`: one client call and how its response becomes a tool result,
  driven from sync code (``run``) and async code (``arun``). The client methods have the
  same names on ``HumanWire`` and ``AsyncHumanWire``, so the call is described once.
- The argument schemas a model reads, kept plain: no ``$ref``, no ``anyOf``, no titles
  (small models fill flat schemas far more reliably). :class:`FormFieldSpec` is the flat
  form design a model fills; :func:`form_fields_from_specs` turns it into wire fields.
- The texts a model reads: tool descriptions, argument descriptions, and results as
  sentences (the argument schemas themselves are in ``humanwire._tool_schemas``).

Framework-neutral: ``humanwire.langchain``, ``humanwire.llama_index`` and
``humanwire.mcp`` build on it, so a tool reads the same in every framework.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    Field,
    ValidationError,
    WithJsonSchema,
)

from .errors import error_from_validation, invalid_request
from .types import (
    CallConversationEndedEvent,
    CallResponse,
    FieldOption,
    FieldType,
    FormField,
    FormReceivedEvent,
    FormResponse,
    InteractionStatus,
    MessageReceivedEvent,
    MessageResponse,
    ValidationRule,
)

if TYPE_CHECKING:
    from ._client import AsyncHumanWire, HumanWire

__all__ = [
    "ASK_CHANNEL_DESCRIPTION",
    "CALL_PROMPT",
    "CHANNEL_NAMES",
    "CHECK_DESCRIPTION",
    "DISCORD_TO",
    "EMAIL_TO",
    "FORM_DESCRIPTION",
    "FORM_FIELDS",
    "FORM_MESSAGE",
    "FORM_TITLE",
    "INTERACTION_ID",
    "MESSAGE",
    "NOTE",
    "NO_ANSWER",
    "PERSON",
    "PHONE_TO",
    "SLACK_TO",
    "TEAMS_TO",
    "TELEGRAM_TO",
    "FormFieldList",
    "FormFieldSpec",
    "MessageChannel",
    "Operation",
    "OptionalText",
    "ask_description",
    "call_description",
    "call_text",
    "check_back_note",
    "check_back_text",
    "describe_status",
    "form_description",
    "form_fields_from_specs",
    "form_text",
    "late_note",
    "message_text",
    "notify_description",
    "notify_person_description",
    "optional_text",
    "person_description",
    "person_sent_text",
    "plain_json_schema",
    "sent_text",
    "with_link",
]

R = TypeVar("R")
T = TypeVar("T")

# --- one call, two drivers ----------------------------------------------------------------


@dataclass(frozen=True)
class Operation(Generic[R, T]):
    """A client call and how its response becomes the result.

    ``send`` gets a client and calls one of its methods: with a ``HumanWire`` that returns
    the response, with an ``AsyncHumanWire`` an awaitable of it. ``finish`` turns the
    response into what the tool returns.
    """

    send: Callable[[Any], Any]
    finish: Callable[[R], T]

    def run(self, client: HumanWire) -> T:
        response: R = self.send(client)
        return self.finish(response)

    async def arun(self, client: AsyncHumanWire) -> T:
        response: R = await self.send(client)
        return self.finish(response)


# --- plain schemas ------------------------------------------------------------------------


def plain_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema as a model reads it best: references inlined, ``X | None``
    shown as ``X`` (leaving it out is how a model says "none"), no titles."""
    schema = model.model_json_schema()
    definitions: dict[str, Any] = schema.pop("$defs", {})

    def visit(node: Any) -> Any:
        if isinstance(node, list):
            return [visit(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = definitions[str(node["$ref"]).rsplit("/", 1)[-1]]
            rest = {key: value for key, value in node.items() if key != "$ref"}
            return visit({**target, **rest})
        choices = node.get("anyOf")
        if isinstance(choices, list) and {"type": "null"} in choices and len(choices) == 2:
            (kept,) = [choice for choice in choices if choice != {"type": "null"}]
            rest = {key: value for key, value in node.items() if key != "anyOf"}
            if rest.get("default", 0) is None:
                del rest["default"]
            return visit({**kept, **rest})
        # A string "title" is pydantic's label; a property named "title" holds a dict.
        return {
            key: visit(value)
            for key, value in node.items()
            if not (key == "title" and isinstance(value, str))
        }

    plain: dict[str, Any] = visit(schema)
    return plain


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


OptionalText = Annotated[str | None, WithJsonSchema({"type": "string"})]
"""An optional string shown to the model as a plain string (no ``anyOf`` with null)."""


def optional_text(description: str) -> Any:
    """The ``Field`` of an :data:`OptionalText` argument: default ``None``, not shown."""
    return Field(default=None, description=description, json_schema_extra=_drop_default)


# --- the form a model designs -------------------------------------------------------------


def _options(value: Any) -> Any:
    """Options as the model writes them: strings (each is label and value), or
    ``{label, value}`` objects for a model that copies the wire format."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError("options must be a list of strings")
    options: dict[str, FieldOption] = {}
    for item in value:
        if isinstance(item, Mapping) and item.get("label") is not None:
            label = str(item["label"]).strip()
            option = FieldOption(label=label, value=str(item.get("value") or label).strip())
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
            text = str(item).strip()
            option = FieldOption(label=text, value=text)
        else:
            raise ValueError("options must be a list of strings")
        if option.label and option.value:
            options.setdefault(option.value, option)
    return list(options.values())


_FIELD_TYPES_TEXT = (
    "text: one line; textarea: several lines; email; phone_number; select: one choice "
    "among options; checkbox: yes/no; address: postal address."
)
_PATTERN_TYPES = ("text", "textarea", "email", "phone_number")


class FormFieldSpec(BaseModel):
    """One input of the form."""

    label: str = Field(min_length=1, description="The question shown above the input.")
    type: FieldType = Field(default="text", description=_FIELD_TYPES_TEXT)
    required: bool = Field(default=False, description="true if the person must answer it.")
    options: Annotated[
        list[FieldOption] | None,
        BeforeValidator(_options),
        WithJsonSchema({"type": "array", "items": {"type": "string"}}),
    ] = Field(
        default=None,
        description='The choices of a select field, e.g. ["Small", "Large"]. Select only.',
        json_schema_extra=_drop_default,
    )
    id: str | None = Field(
        default=None,
        description=(
            "Optional key of this answer in the result (letters, digits, _ and -). "
            "Made from the label when left out."
        ),
    )
    placeholder: str | None = Field(default=None, description="Example text inside the input.")
    helper_text: str | None = Field(
        default=None,
        validation_alias=AliasChoices("helper_text", "helperText"),
        description="Hint shown below the input.",
    )
    pattern: str | None = Field(
        default=None,
        description=(
            "Optional regular expression the answer must match, anchored like ^[0-9]{5}$ "
            "(JavaScript syntax without lookaround or backreferences; text, textarea, email "
            "and phone_number only)."
        ),
    )
    pattern_hint: str | None = Field(
        default=None, description="Shown when the answer does not match pattern."
    )


FormFieldList = list[Annotated[FormFieldSpec, WithJsonSchema(plain_json_schema(FormFieldSpec))]]
"""The ``fields`` argument of a form a model designs: a flat, self-contained schema."""


def _slug(label: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").lower()
    return slug[:40] or "field"


def form_fields_from_specs(specs: list[FormFieldSpec | Mapping[str, Any]]) -> list[FormField]:
    """The model's field specs as wire form fields: ids derived from labels and made
    unique, select options as label/value pairs, options on other types and patterns on
    types without validation dropped.

    Raises ``InvalidRequestError`` with a message the model can act on (a select without
    options, a pattern outside the form pattern dialect).
    """
    if not specs:
        raise invalid_request("a form needs at least one field", field="fields")
    fields: list[FormField] = []
    seen: set[str] = set()
    for index, raw in enumerate(specs):
        where = f"fields[{index}]"
        try:
            spec = raw if isinstance(raw, FormFieldSpec) else FormFieldSpec.model_validate(raw)
        except ValidationError as exc:
            raise _located(error_from_validation(exc), where) from None
        base = spec.id if spec.id and re.fullmatch(r"[A-Za-z0-9_-]+", spec.id) else None
        field_id = base or _slug(spec.label)
        candidate, n = field_id, 2
        while candidate in seen:
            candidate, n = f"{field_id}_{n}", n + 1
        seen.add(candidate)
        options = None
        if spec.type == "select":
            if not spec.options:
                raise invalid_request(
                    f"{where} ({spec.label!r}) is a select field: give it options",
                    field=f"{where}.options",
                )
            options = spec.options
        try:
            validations = None
            if spec.pattern and spec.type in _PATTERN_TYPES:
                hint = spec.pattern_hint or f"Please check the format of {spec.label!r}."
                validations = [ValidationRule(title=hint, pattern=spec.pattern)]
            fields.append(
                FormField(
                    id=candidate,
                    label=spec.label,
                    type=spec.type,
                    required=spec.required,
                    options=options,
                    placeholder=spec.placeholder or None,
                    helper_text=spec.helper_text or None,
                    validations=validations,
                )
            )
        except ValidationError as exc:
            raise _located(error_from_validation(exc), where) from None
    return fields


def _located(error: Any, where: str) -> Exception:
    field = f"{where}.{error.field}" if error.field else where
    return invalid_request(f"{where}: {error.message}", field=field)


# --- texts a model reads ------------------------------------------------------------------

MESSAGE = (
    "The text sent to the human. Make it stand alone: say who you are, what you need and "
    "why, and ask one clear question they can answer in a short reply."
)
NOTE = (
    "The text sent to the human. No answer is awaited, so do not ask a question: use it "
    "for updates, results and heads-ups."
)
PHONE_TO = (
    "Recipient phone number in E.164 form, e.g. +14155550123. Leave it out to reach the "
    "default person."
)
EMAIL_TO = (
    "Recipient email address, e.g. ada@example.com. Leave it out to reach the default person."
)
SLACK_TO = (
    "Slack member ID (starts with U or W) or channel ID (starts with C). Leave it out to "
    "reach the default person."
)
TELEGRAM_TO = (
    "Telegram chat ID, digits (negative for a group), e.g. 123456789: the person's chat "
    "with the bot. Leave it out to reach the default person."
)
TEAMS_TO = (
    "Microsoft Teams user ID of a person who installed the bot, starting with 29:, e.g. "
    "29:1a2b3c. Leave it out to reach the default person."
)
DISCORD_TO = (
    "Discord user ID (a direct message; the person shares a server with the bot) or "
    "channel ID, digits, e.g. 80351110224678912. Leave it out to reach the default person."
)
PERSON = (
    "ID of a person in the people directory, starting with per_, e.g. per_4f2a9c. Leave it "
    "out to reach the default person."
)
CALL_PROMPT = (
    "Everything the voice agent placing the call knows: who it calls on behalf of, the "
    "goal, what to do for the likely answers, and what to say on voicemail."
)
INTERACTION_ID = "The interaction id given in an earlier message, form or call result."
FORM_TITLE = "Title shown at the top of the form, e.g. 'Confirm the delivery address'."
FORM_FIELDS = "The inputs of the form, in the order the person sees them (1 to 30)."
FORM_DESCRIPTION = "Optional subtitle below the title: what the form is for."
FORM_MESSAGE = (
    "Optional short text sent with the form link, e.g. 'Please confirm your order'. "
    "The link is added at the end, or where you write {{url}}."
)
NO_ANSWER = (
    "If nobody answers in time you get a note saying so. That is normal: continue without "
    "the answer rather than asking again at once."
)

_URL = "{{url}}"


def with_link(message: str | None) -> str | None:
    """A form's link message with the ``{{url}}`` placeholder, appended when missing."""
    if not message:
        return None
    return message if _URL in message else f"{message} {_URL}"


def late_note(response: MessageResponse | FormResponse) -> str:
    """After the no-response text, while the service still listens: the interaction id,
    so a model can check for a late answer instead of asking again."""
    if response.responded is False and response.status == "pending":
        return f" (They can still answer later: interaction {response.interaction_id}.)"
    return ""


def message_text(response: MessageResponse) -> str:
    """A message that waited: the reply (``Human response: …``, or the channel card's
    template), or the no-response text, a normal result."""
    return response.text + late_note(response)


def sent_text(response: MessageResponse, channel: str) -> str:
    """A message sent without waiting."""
    text = (
        f"Message sent by {channel} (interaction {response.interaction_id}); no reply is awaited."
    )
    if response.status == "pending":
        text += " A reply may still come later: check it with the interaction id."
    return text


def person_sent_text(response: MessageResponse) -> str:
    """A message sent to a person without waiting."""
    text = (
        f"Message sent to the person (interaction {response.interaction_id}); no reply is awaited."
    )
    if response.status == "pending":
        text += " A reply may still come later: check it with the interaction id."
    return text


def form_text(response: FormResponse, *, submitted_prefix: str = "") -> str:
    """A form's outcome: one ``label: value`` line per answered field, the no-response
    text, or (sent without waiting) where to check later."""
    if response.responded and response.content is not None:
        return submitted_prefix + response.content
    if response.response is not None:
        return response.response + late_note(response)
    return (
        f"Form sent ({response.form_url}); no answer is awaited now. Check for the "
        f"submission later with interaction {response.interaction_id}."
    )


def call_text(response: CallResponse) -> str:
    """A call's outcome; a missed call is a normal result, not an error."""
    if response.outcome == "no_answer":
        reason = response.error or "human did not respond"
        return f"The human did not answer the call ({reason})."
    if response.outcome == "transferred":
        return f"The call was transferred to a human. Summary: {response.summary or ''}".strip()
    if response.outcome == "completed":
        return f"Call completed. Summary: {response.summary or ''}".strip()
    return (
        f"Call placed; interaction {response.interaction_id} is {response.status}. "
        "Check its outcome later with the interaction id."
    )


def describe_status(status: InteractionStatus) -> str:
    """An interaction's state as a sentence for a model."""
    head = f"Interaction {status.interaction_id} ({status.kind} by {status.channel})"
    result = status.result
    if isinstance(result, MessageReceivedEvent):
        return f"{head} was answered. Human response: {result.payload.body}"
    if isinstance(result, FormReceivedEvent):
        values = "\n".join(f"{key}: {value}" for key, value in result.payload.values.items())
        return f"{head}: the human submitted the form:\n{values}"
    if isinstance(result, CallConversationEndedEvent):
        return f"{head}: the call ended. Summary: {result.payload.summary}"
    if status.ended:
        return f"{head} ended without a response from the human."
    return f"{head} is still pending: no response yet. Check again later."


# --- tool descriptions --------------------------------------------------------------------

CHANNEL_NAMES = {
    "sms": "SMS",
    "whatsapp": "WhatsApp",
    "slack": "Slack",
    "email": "email",
    "telegram": "Telegram",
    "teams": "Microsoft Teams",
    "discord": "Discord",
}
"""How a channel is named in the texts a model reads."""

MessageChannel = Literal["sms", "whatsapp", "slack", "email", "telegram", "teams", "discord"]
"""The channels the message tools send on."""

_ASKS = {
    "sms": "Ask a human a question by SMS text message.",
    "whatsapp": "Ask a human a question on WhatsApp.",
    "slack": "Ask a human a question on Slack (they reply in the thread).",
    "email": "Ask a human a question by email (their reply to the email is the answer).",
    "telegram": "Ask a human a question on Telegram (their next message in the chat is the "
    "answer).",
    "teams": "Ask a human a question on Microsoft Teams (their next message in their chat "
    "with the bot is the answer).",
    "discord": "Ask a human a question on Discord (they answer through the message's Reply "
    "button).",
}


def _waits(wait_time: float) -> str:
    return f"Waits up to {wait_time:g} seconds"


def ask_description(channel: str, wait_time: float) -> str:
    """The description of ``ask_human_<channel>``: send a question, wait for the reply."""
    return (
        f"{_ASKS[channel]} {_waits(wait_time)} for the reply. Use it when you need a "
        "decision, a fact or a confirmation only a person can give. Returns "
        f"'Human response: <their reply>'. {NO_ANSWER}"
    )


def notify_description(channel: str) -> str:
    """The description of ``notify_human_<channel>``: a one-way message."""
    return (
        f"Send a human a one-way {CHANNEL_NAMES[channel]} message (an update or a notice) "
        "without waiting for a reply. Returns the interaction id."
    )


_WHEREVER = (
    "to the first address they confirmed (SMS, WhatsApp, Slack, email, Telegram, Microsoft "
    "Teams or Discord, in the order they chose)"
)


def _moves(fallback_after: float | None) -> str:
    if fallback_after is None:
        return ""
    return (
        f" If they have not answered after {fallback_after:g} seconds, it is sent again on "
        "their next address, and so on."
    )


def person_description(wait_time: float, fallback_after: float | None = None) -> str:
    """The description of ``ask_human_person``: ask a person wherever they are, wait."""
    return (
        f"Ask a specific person a question wherever they can be reached: it goes {_WHEREVER}."
        f"{_moves(fallback_after)} {_waits(wait_time)} for the reply, on whichever channel "
        "it comes. Use it when you need a decision, a fact or a confirmation only this "
        f"person can give. Returns 'Human response: <their reply>'. {NO_ANSWER}"
    )


def notify_person_description(fallback_after: float | None = None) -> str:
    """The description of ``notify_human_person``: a one-way message to a person."""
    return (
        "Send a specific person a one-way message (an update or a notice) wherever they can "
        f"be reached: it goes {_WHEREVER}.{_moves(fallback_after)} Does not wait for a "
        "reply. Returns the interaction id."
    )


ASK_CHANNEL_DESCRIPTION = (
    "Ask a human through a preconfigured channel (it sets who is asked and how long to "
    "wait) and wait for their reply. Use it when you need a decision or a fact only a "
    f"person can give. Returns their reply. {NO_ANSWER}"
)
"""The description of a tool that sends through a channel card."""


def form_description(
    channel: str,
    wait_time: float | None,
    *,
    title: str | None = None,
    labels: list[str] | None = None,
) -> str:
    """The description of a form tool: model-designed (no ``title``), or the fixed form
    ``title`` with its field ``labels``; ``wait_time=None`` sends without waiting."""
    where = CHANNEL_NAMES[channel]
    if wait_time is None:
        waits = (
            "Returns at once, without the answers: check them later with the "
            "interaction id it gives."
        )
    else:
        waits = f"{_waits(wait_time)} for the submission. {NO_ANSWER}"
    returns = "Returns one 'label: value' line per answered field."
    if title is None:
        return (
            f"Ask a human to fill in a web form you design, sent as a link by {where}. "
            "Use it to collect several structured answers at once (choices, emails, "
            f"phone numbers, addresses, yes/no). {returns} {waits}"
        )
    return (
        f"Send a human the form '{title}' ({', '.join(labels or [])}) as a link by {where}. "
        f"{returns} {waits}"
    )


def call_description(wait_for_call_end: bool) -> str:
    """The description of ``call_human``."""
    if wait_for_call_end:
        returns = (
            "Waits for the call to end and returns its summary, or a note that the "
            "human did not answer (a normal result: continue without it)."
        )
    else:
        returns = (
            "Returns at once with the interaction id; check the call's outcome later with that id."
        )
    return (
        "Phone a human: a voice agent places the call following your prompt and "
        f"reports back. Use it when a conversation is faster than text. {returns}"
    )


CHECK_DESCRIPTION = (
    "Check whether a human has answered an earlier message, form or call, given the "
    "interaction id from its result. Returns the answer if there is one, or says it is "
    "still pending (then check again later, not at once)."
)
"""The description of ``check_human_interaction``."""


def check_back_text(interaction_id: str, check_tool: str, listening: float | None) -> str:
    """A wait handed back before the human answered (the caller cannot hold the request
    longer): a normal result telling the model how to get the answer later."""
    still = (
        f" The service keeps listening for about {listening:g} more seconds." if listening else ""
    )
    return (
        f"The human has not answered yet (interaction {interaction_id}).{still} Continue "
        f"with other work and check back later with {check_tool} (interaction_id "
        f"{interaction_id}) to get their answer; do not ask again."
    )


def check_back_note(check_tool: str) -> str:
    """Added to a description when the tool hands a long wait back early."""
    return (
        "If they have not answered by then, you get the interaction id instead: the "
        f"service keeps listening, and {check_tool} returns their answer later."
    )
