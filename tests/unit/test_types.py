"""Every rule of the wire models in ``humanwire.types``, valid and invalid, with the error
detail (code, field path) the service reports for each."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from humanwire.types import (
    CallConversationEndedEvent,
    CallRequest,
    CallResponse,
    ChannelCardCreateRequest,
    ChannelMessageRequest,
    ErrorDetail,
    FormField,
    FormResponse,
    InteractionStatus,
    MessageReceivedEvent,
    MessageResponse,
    PhoneCallRequest,
    ReserveNumberRequest,
    SandboxDelivery,
    SandboxReplyRequest,
    SlackFormRequest,
    SlackMessageRequest,
    SMSFormRequest,
    SMSMessageRequest,
    ValidationRule,
    WebhookCreateRequest,
    WhatsAppFormRequest,
    WhatsAppMessageRequest,
    WhatsAppOwnNumberFormRequest,
    WhatsAppSharedFormRequest,
    detail_from_validation_error,
    event_adapter,
    field_path,
    format_seconds,
)
from humanwire.types.forms import (
    FORM_PATTERN_BUDGET,
    MAX_FORM_PATTERN_CHARS,
    MAX_FORM_RULES,
    STORED_FORM,
)

TO = "+12025550100"
TEXT = {"id": "name", "label": "Name", "type": "text"}
WHATSAPP_FORM: TypeAdapter[Any] = TypeAdapter(WhatsAppFormRequest)


def detail(model: type[BaseModel] | TypeAdapter[Any], data: dict[str, Any]) -> ErrorDetail:
    """The error detail of ``data`` refused by ``model`` (fails the test when accepted)."""
    with pytest.raises(ValidationError) as info:
        if isinstance(model, TypeAdapter):
            model.validate_python(data)
        else:
            model.model_validate(data)
    return detail_from_validation_error(info.value)


def form(**changes: Any) -> dict[str, Any]:
    return {"to": TO, "title": "T", "fields": [TEXT], "waitTime": 60, **changes}


# -- phone numbers and slack ids -------------------------------------------------------------


@pytest.mark.parametrize("number", ["+12025550100", "+442079460123", "+14155550123"])
def test_valid_e164(number: str) -> None:
    assert SMSMessageRequest.model_validate({"to": number, "message": "x"}).to == number


@pytest.mark.parametrize(
    "number",
    [
        "+15555550100",  # 555 is no area code: phonenumbers says invalid
        "12025550100",  # no plus
        "+1 202 555 0100",  # spaces
        "+1202555010",  # too short for the US
        "+0202555010",
        "",
        "+",
        "tel:+12025550100",
    ],
)
def test_invalid_e164_is_invalid_to_number(number: str) -> None:
    error = detail(SMSMessageRequest, {"to": number, "message": "x"})
    assert (error.code, error.message, error.field) == (
        "invalid_to_number",
        "invalid to number",
        "to",
    )


def test_a_number_that_is_not_a_string_is_invalid_to_number() -> None:
    assert (
        detail(SMSMessageRequest, {"to": 12025550100, "message": "x"}).code == "invalid_to_number"
    )


def test_from_and_transfer_to_are_numbers_too() -> None:
    error = detail(SMSMessageRequest, {"to": TO, "message": "x", "from": "+15555550100"})
    assert (error.code, error.field) == ("invalid_to_number", "from")
    error = detail(CallRequest, {"to": TO, "prompt": "p", "transferTo": "+1"})
    assert (error.code, error.field) == ("invalid_to_number", "transferTo")


@pytest.mark.parametrize(
    "slack_id", ["U0HUMAN0001", "C0123ABCD", "G1234567", "D12345678", "W0ABCDEF"]
)
def test_valid_slack_ids(slack_id: str) -> None:
    assert SlackMessageRequest.model_validate({"to": slack_id, "message": "x"}).to == slack_id


@pytest.mark.parametrize("slack_id", ["u0human0001", "X0123ABCD", "U12345", "#general", TO, ""])
def test_invalid_slack_ids(slack_id: str) -> None:
    error = detail(SlackMessageRequest, {"to": slack_id, "message": "x"})
    assert (error.code, error.field) == ("invalid_to_number", "to")


def test_slack_from_is_a_workspace_id() -> None:
    ok = SlackMessageRequest.model_validate(
        {"to": "U0HUMAN0001", "message": "x", "from": "T0SHARED01"}
    )
    assert ok.from_ == "T0SHARED01"
    error = detail(
        SlackMessageRequest, {"to": "U0HUMAN0001", "message": "x", "from": "U0HUMAN0001"}
    )
    assert (error.code, error.field) == ("invalid_request", "from")


# -- waitTime and followUpTime ---------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 1.5, 60, 600, 600.0])
def test_wait_time_in_bounds(value: float) -> None:
    request = SMSMessageRequest.model_validate({"to": TO, "message": "x", "waitTime": value})
    assert request.wait_time == value


@pytest.mark.parametrize("value", [0, 0.99, 600.01, 601, -1, 10**400, float("nan"), float("inf")])
def test_wait_time_out_of_bounds(value: float) -> None:
    error = detail(SMSMessageRequest, {"to": TO, "message": "x", "waitTime": value})
    assert (error.code, error.field) == ("invalid_request", "waitTime")
    assert "1 to 600" in error.message


@pytest.mark.parametrize("value", [True, "30", None])
def test_wait_time_must_be_a_number(value: Any) -> None:
    data = {"to": TO, "message": "x", "waitTime": value}
    if value is None:  # explicit null means "not given"
        assert SMSMessageRequest.model_validate(data).wait_time is None
        return
    error = detail(SMSMessageRequest, data)
    assert (error.code, error.field) == ("invalid_request", "waitTime")


@pytest.mark.parametrize(("value", "valid"), [(1, True), (60000, True), (0, False), (60001, False)])
def test_follow_up_time_bounds(value: int, valid: bool) -> None:
    data = {"to": TO, "message": "x", "followUpTime": value}
    if valid:
        assert WhatsAppMessageRequest.model_validate(data).follow_up_time == value
    else:
        error = detail(WhatsAppMessageRequest, data)
        assert (error.code, error.field) == ("invalid_request", "followUpTime")
        assert "1 to 60000" in error.message


def test_format_seconds_writes_what_the_client_wrote() -> None:
    assert (format_seconds(30), format_seconds(30.0), format_seconds(2.5)) == ("30", "30", "2.5")


# -- messages --------------------------------------------------------------------------------


def test_message_requests_are_closed_and_need_a_message() -> None:
    error = detail(SMSMessageRequest, {"to": TO, "message": "x", "mediaUrl": "http://x"})
    assert (error.code, error.field, error.message) == (
        "invalid_request",
        "mediaUrl",
        "unknown property 'mediaUrl'",
    )
    error = detail(SMSMessageRequest, {"to": TO})
    assert (error.field, error.message) == ("message", "message is required")
    assert detail(SMSMessageRequest, {"to": TO, "message": ""}).field == "message"
    assert detail(ChannelMessageRequest, {"message": "x", "to": TO}).field == "to"
    # whatsapp from the shared account takes no from
    assert detail(WhatsAppMessageRequest, {"to": TO, "message": "x", "from": TO}).field == "from"


def test_wire_form_is_camel_case_without_unset_fields() -> None:
    request = SMSMessageRequest(to=TO, message="x", wait_time=30, from_="+12025550142")
    assert request.to_wire() == {
        "to": TO,
        "message": "x",
        "waitTime": 30,
        "from": "+12025550142",
    }
    assert (
        SMSMessageRequest.model_validate({"to": TO, "message": "x", "wait_time": 5}).wait_time == 5
    )


def test_message_response_reads_every_shape() -> None:
    sent = MessageResponse.model_validate({"interactionId": "i", "status": "ended", "new": 1})
    assert sent.responded is None and sent.text == "Message sent; interaction i is ended."
    replied = MessageResponse.model_validate(
        {
            "interactionId": "i",
            "status": "ended",
            "responded": True,
            "response": "Human response: ok",
        }
    )
    assert replied.text == "Human response: ok"
    silent = MessageResponse.model_validate(
        {
            "interactionId": "i",
            "status": "pending",
            "responded": False,
            "response": "Human did not respond. Continue where you left off.",
        }
    )
    assert silent.responded is False and silent.text.startswith("Human did not respond")


# -- forms -----------------------------------------------------------------------------------


def test_a_minimal_form_field() -> None:
    field = FormField.model_validate(TEXT)
    assert (field.required, field.placeholder, field.options, field.validations) == (
        False,
        None,
        None,
        None,
    )


@pytest.mark.parametrize("field_id", ["name", "first_name", "first-name", "Q1", "a"])
def test_field_id_charset_valid(field_id: str) -> None:
    assert FormField.model_validate({**TEXT, "id": field_id}).id == field_id


@pytest.mark.parametrize("field_id", ["first name", "naïve", "a.b", "", "x/y", "<b>"])
def test_field_id_charset_invalid(field_id: str) -> None:
    error = detail(SMSFormRequest, form(fields=[{**TEXT, "id": field_id}]))
    assert (error.code, error.field) == ("invalid_request", "fields[0].id")


def test_field_ids_are_unique() -> None:
    error = detail(SMSFormRequest, form(fields=[TEXT, {**TEXT, "label": "Again"}]))
    assert (error.code, error.field) == ("invalid_request", "fields[1].id")
    assert "duplicate field id 'name'" in error.message


@pytest.mark.parametrize("spelling", ["phone_number", "phoneNumber"])
def test_phone_number_type_in_both_spellings(spelling: str) -> None:
    field = FormField.model_validate({"id": "p", "label": "Phone", "type": spelling})
    assert field.type == "phone_number"
    assert field.model_dump(by_alias=True)["type"] == "phone_number"


def test_unknown_field_type() -> None:
    error = detail(SMSFormRequest, form(fields=[{**TEXT, "type": "date"}]))
    assert (error.code, error.field) == ("invalid_request", "fields[0].type")


def test_options_only_and_always_for_select() -> None:
    select = {
        "id": "s",
        "label": "Size",
        "type": "select",
        "options": [{"label": "S", "value": "s"}],
    }
    assert FormField.model_validate(select).options is not None
    no_options: tuple[list[Any] | None, ...] = (None, [])
    for options in no_options:
        error = detail(SMSFormRequest, form(fields=[{**select, "options": options}]))
        assert (error.code, error.field) == ("invalid_request", "fields[0].options")
    error = detail(
        SMSFormRequest, form(fields=[{**TEXT, "options": [{"label": "S", "value": "s"}]}])
    )
    assert (error.field, error.message) == (
        "fields[0].options",
        "options: only a select field takes options, not a text field",
    )


def test_options_need_label_and_value_strings() -> None:
    base = {"id": "s", "label": "Size", "type": "select"}
    error = detail(SMSFormRequest, form(fields=[{**base, "options": [{"label": "S"}]}]))
    assert error.field == "fields[0].options[0].value"
    error = detail(SMSFormRequest, form(fields=[{**base, "options": [{"label": "S", "value": 1}]}]))
    assert error.field == "fields[0].options[0].value"


@pytest.mark.parametrize("kind", ["text", "textarea", "email", "phone_number"])
def test_validations_allowed_on_the_four_text_types(kind: str) -> None:
    field = FormField.model_validate(
        {
            "id": "f",
            "label": "F",
            "type": kind,
            "validations": [{"title": "Digits", "pattern": r"^\d+$"}],
        }
    )
    assert field.validations == [ValidationRule(title="Digits", pattern=r"^\d+$")]


@pytest.mark.parametrize("kind", ["checkbox", "select", "address"])
def test_validations_refused_elsewhere(kind: str) -> None:
    field: dict[str, Any] = {"id": "f", "label": "F", "type": kind, "validations": []}
    if kind == "select":
        field["options"] = [{"label": "A", "value": "a"}]
    error = detail(SMSFormRequest, form(fields=[field]))
    assert (error.code, error.field) == ("invalid_request", "fields[0].validations")
    assert kind in error.message


def test_invalid_regex_names_its_path() -> None:
    fields = [
        TEXT,
        {
            **TEXT,
            "id": "code",
            "validations": [{"title": "ok", "pattern": "x"}, {"title": "bad", "pattern": "[a-"}],
        },
    ]
    error = detail(SMSFormRequest, form(fields=fields))
    assert (error.code, error.field) == ("invalid_request", "fields[1].validations[1].pattern")
    assert "not a valid regular expression" in error.message


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(\w)\1", "backreference"),
        (r"^\d+(?=px)", "lookahead"),
        (r"(?<=\$)\d+", "lookbehind"),
        (r"(?P<year>\d{4})", "(?P"),
        (r"(?i)yes", "inline flags"),
        (r"^\d+\Z", "anchor with ^ and $"),
        (r"^a++$", "possessive"),
        ("a" * 1001, "longer than 1000"),
        ("x{5000}", "more than 1000"),
    ],
)
def test_patterns_outside_the_dialect_name_their_path(pattern: str, reason: str) -> None:
    fields = [
        TEXT,
        {**TEXT, "id": "a"},
        {
            **TEXT,
            "id": "code",
            "validations": [{"title": "ok", "pattern": "^x"}, {"title": "t", "pattern": pattern}],
        },
    ]
    error = detail(SMSFormRequest, form(fields=fields))
    assert (error.code, error.field) == ("invalid_request", "fields[2].validations[1].pattern")
    assert error.message.startswith("pattern ") and reason in error.message


def test_a_pattern_too_large_for_re2_names_its_path() -> None:
    rule = {"title": "t", "pattern": "(?:x{1000})" * 90}
    error = detail(SMSFormRequest, form(fields=[TEXT, {**TEXT, "id": "b", "validations": [rule]}]))
    assert (error.code, error.field) == ("invalid_request", "fields[1].validations[0].pattern")
    assert "too large" in error.message


def test_a_forms_patterns_together_have_a_budget() -> None:
    # ~22,000 RE2 instructions each: two fit in FORM_PATTERN_BUDGET, the third does not.
    rules = [{"title": "t", "pattern": f"^.{{{i},1000}}$"} for i in range(3)]
    fields = [TEXT, {**TEXT, "id": "b", "validations": rules}]
    assert FORM_PATTERN_BUDGET == 50_000
    error = detail(SMSFormRequest, form(fields=fields))
    assert (error.code, error.field) == ("invalid_request", "fields[1].validations[2].pattern")
    assert "past what one form may hold" in error.message
    SMSFormRequest.model_validate(
        form(fields=[TEXT, {**TEXT, "id": "b", "validations": rules[:2]}])
    )


def test_a_form_takes_at_most_fifty_rules() -> None:
    rule = {"title": "t", "pattern": "^x"}
    fields = [{**TEXT, "id": f"f{i}", "validations": [rule] * 10} for i in range(6)]
    assert MAX_FORM_RULES == 50
    error = detail(SMSFormRequest, form(fields=fields))
    assert (error.code, error.field) == ("invalid_request", "fields[5].validations")
    assert "at most 50 validation rules" in error.message
    SMSFormRequest.model_validate(form(fields=fields[:5]))


def test_a_forms_patterns_take_at_most_ten_thousand_characters() -> None:
    rule = {"title": "t", "pattern": "^" + "x" * 999}
    fields = [{**TEXT, "id": f"f{i}", "validations": [rule] * 2} for i in range(6)]
    assert MAX_FORM_PATTERN_CHARS == 10_000
    error = detail(SMSFormRequest, form(fields=fields))
    assert (error.code, error.field) == ("invalid_request", "fields[5].validations")
    assert "10,000 characters" in error.message
    SMSFormRequest.model_validate(form(fields=fields[:5]))


def test_a_stored_form_is_parsed_without_checking_its_patterns_again() -> None:
    # A form stored before the dialect (Python's re) must still open: its page and the
    # service both leave such a rule unapplied.
    legacy = form(fields=[{**TEXT, "validations": [{"title": "t", "pattern": r"(?P<x>a)\Z"}]}])
    assert detail(SMSFormRequest, legacy).field == "fields[0].validations[0].pattern"
    parsed = SMSFormRequest.model_validate(legacy, context={STORED_FORM: True})
    assert [r.pattern for r in parsed.fields[0].validations or ()] == [r"(?P<x>a)\Z"]


def test_validation_rules_need_title_and_pattern() -> None:
    error = detail(SMSFormRequest, form(fields=[{**TEXT, "validations": [{"pattern": "x"}]}]))
    assert error.field == "fields[0].validations[0].title"


@pytest.mark.parametrize(
    ("where", "data"),
    [
        ("colour", form(colour="red")),
        ("fields[0].colour", form(fields=[{**TEXT, "colour": "red"}])),
        (
            "fields[0].options[0].extra",
            form(
                fields=[
                    {
                        "id": "s",
                        "label": "S",
                        "type": "select",
                        "options": [{"label": "a", "value": "a", "extra": 1}],
                    }
                ]
            ),
        ),
        (
            "fields[0].validations[0].flags",
            form(fields=[{**TEXT, "validations": [{"title": "t", "pattern": "x", "flags": "i"}]}]),
        ),
    ],
)
def test_form_schemas_are_closed(where: str, data: dict[str, Any]) -> None:
    error = detail(SMSFormRequest, data)
    assert (error.code, error.field, error.message) == (
        "invalid_request",
        where,
        f"unknown property {where!r}",
    )


def test_a_form_needs_a_window() -> None:
    error = detail(SMSFormRequest, {"to": TO, "title": "T", "fields": [TEXT]})
    assert (error.code, error.field) == ("invalid_request", "waitTime")
    only_wait = SMSFormRequest.model_validate(form())
    assert only_wait.effective_follow_up_time == 90.0
    only_follow = SMSFormRequest.model_validate(
        {"to": TO, "title": "T", "fields": [TEXT], "followUpTime": 30}
    )
    assert only_follow.wait_time is None and only_follow.effective_follow_up_time == 30.0


def test_form_window_bounds_and_fields_present() -> None:
    assert detail(SMSFormRequest, form(waitTime=601)).field == "waitTime"
    assert detail(SMSFormRequest, form(followUpTime=60001)).field == "followUpTime"
    assert detail(SMSFormRequest, form(fields=[])).field == "fields"
    assert detail(SMSFormRequest, {"to": TO, "fields": [TEXT], "waitTime": 5}).field == "title"


def test_brand_image_url_must_be_http() -> None:
    assert SMSFormRequest.model_validate(form(brandImageUrl="https://x.test/logo.png"))
    error = detail(SMSFormRequest, form(brandImageUrl="javascript:alert(1)"))
    assert (error.code, error.field) == ("invalid_request", "brandImageUrl")


def test_sms_form_needs_a_phone_number_slack_form_a_slack_id() -> None:
    assert detail(SMSFormRequest, form(to="U0HUMAN0001")).code == "invalid_to_number"
    slack = SlackFormRequest.model_validate(form(to="U0HUMAN0001", **{"from": "T0SHARED01"}))
    assert slack.from_ == "T0SHARED01"
    assert detail(SlackFormRequest, form()).code == "invalid_to_number"


def test_whatsapp_variant_selection() -> None:
    shared = WHATSAPP_FORM.validate_python(form())
    assert isinstance(shared, WhatsAppSharedFormRequest)
    own = WHATSAPP_FORM.validate_python(
        form(**{"from": "+12025550142"}, template={"id": "tpl", "variables": {"a": "b"}})
    )
    assert isinstance(own, WhatsAppOwnNumberFormRequest) and own.template.variables == {"a": "b"}
    assert own.to_wire()["from"] == "+12025550142"
    # Either own-number property selects the own-number variant, which needs both.
    error = detail(WHATSAPP_FORM, form(**{"from": "+12025550142"}))
    assert (error.field, error.message) == ("template", "template is required")
    error = detail(WHATSAPP_FORM, form(template={"id": "tpl"}))
    assert (error.field, error.message) == ("from", "from is required")
    error = detail(WHATSAPP_FORM, form(**{"from": "+15555550100"}, template={"id": "tpl"}))
    assert (error.code, error.field) == ("invalid_to_number", "from")
    # The shared variant is closed like every form, and the union tag never shows in paths.
    error = detail(WHATSAPP_FORM, form(message="hi"))
    assert (error.field, error.message) == ("message", "unknown property 'message'")
    assert detail(WHATSAPP_FORM, form(fields=[{**TEXT, "id": "a b"}])).field == "fields[0].id"


def test_form_response_text() -> None:
    submitted = FormResponse.model_validate(
        {
            "interactionId": "f",
            "status": "ended",
            "responded": True,
            "values": {"name": "Ann"},
            "content": "Name: Ann",
            "formUrl": "http://x/f/t",
        }
    )
    assert submitted.text == "Name: Ann"
    pending = FormResponse.model_validate(
        {"interactionId": "f", "status": "pending", "formUrl": "http://x/f/t"}
    )
    assert pending.text == "Form sent (http://x/f/t); interaction f is pending."


# -- calls, numbers, channels, webhooks, sandbox ------------------------------------------------


def test_call_request_defaults_and_rules() -> None:
    call = CallRequest.model_validate({"to": TO, "prompt": "Confirm"})
    assert (call.language, call.voice, call.wait_for_call_end) == ("en-US", "female", False)
    assert CallRequest.model_validate({"to": TO, "prompt": "p", "language": "zh-Hant-TW"})
    for language in ("english", "en_US", "e"):
        assert (
            detail(CallRequest, {"to": TO, "prompt": "p", "language": language}).field == "language"
        )
    assert detail(CallRequest, {"to": TO, "prompt": "p", "voice": "robot"}).field == "voice"
    assert detail(CallRequest, {"to": TO, "prompt": ""}).field == "prompt"
    assert (
        detail(PhoneCallRequest, {"to": TO, "message": "p", "transferTo": TO}).field == "transferTo"
    )


def test_call_response_text() -> None:
    no_answer = CallResponse.model_validate(
        {
            "interactionId": "c",
            "status": "ended",
            "outcome": "no_answer",
            "error": "human did not respond",
        }
    )
    assert no_answer.text == "human did not respond"
    done = CallResponse.model_validate(
        {
            "interactionId": "c",
            "status": "ended",
            "outcome": "completed",
            "summary": "Agreed.",
            "from": "+1",
            "to": TO,
        }
    )
    assert done.text == "Agreed." and done.from_ == "+1"
    assert CallResponse.model_validate({"interactionId": "c", "status": "pending"}).text.endswith(
        "pending."
    )


def test_reserve_number_needs_e164() -> None:
    assert ReserveNumberRequest.model_validate({"phoneNumber": "+12025550142"})
    error = detail(ReserveNumberRequest, {"phoneNumber": "+15555550142"})
    assert (error.code, error.field) == ("invalid_to_number", "phoneNumber")


@pytest.mark.parametrize(
    ("data", "code", "field"),
    [
        ({"type": "sms", "to": TO}, "invalid_request", "waitTime"),
        ({"type": "slack", "to": "U0HUMAN0001"}, "invalid_request", "waitTime"),
        ({"type": "slack", "to": TO, "waitTime": 5}, "invalid_to_number", "to"),
        ({"type": "whatsapp", "to": "+15555550100", "waitTime": 5}, "invalid_to_number", "to"),
        ({"type": "call", "to": TO, "replyLink": True}, "invalid_request", "replyLink"),
        (
            {"type": "sms", "to": TO, "waitTime": 5, "messageTemplate": "Hi"},
            "invalid_request",
            "messageTemplate",
        ),
        ({"type": "fax", "to": TO, "waitTime": 5}, "invalid_request", "type"),
        ({"type": "sms", "to": TO, "waitTime": 5, "color": "red"}, "invalid_request", "color"),
    ],
)
def test_channel_card_rules(data: dict[str, Any], code: str, field: str) -> None:
    error = detail(ChannelCardCreateRequest, data)
    assert (error.code, error.field) == (code, field)


def test_channel_cards_that_are_valid() -> None:
    assert ChannelCardCreateRequest.model_validate({"type": "call", "to": TO}).wait_time is None
    card = ChannelCardCreateRequest.model_validate(
        {
            "type": "slack",
            "to": "C0123ABCD",
            "waitTime": 60,
            "messageTemplate": "Agent: {{message}} ({{waitTime}} s)",
            "replyLink": True,
        }
    )
    assert card.reply_link is True


def test_webhook_registration_rules() -> None:
    ok = WebhookCreateRequest.model_validate(
        {
            "url": "https://agent.test/hook",
            "eventTypes": ["message.received", "form.received"],
            "headers": {"Authorization": "Bearer t"},
        }
    )
    assert ok.to_wire()["eventTypes"] == ["message.received", "form.received"]
    assert (
        detail(WebhookCreateRequest, {"url": "https://a.test", "eventTypes": []}).field
        == "eventTypes"
    )
    assert (
        detail(
            WebhookCreateRequest,
            {"url": "https://a.test", "eventTypes": ["form.received", "form.received"]},
        ).field
        == "eventTypes"
    )
    assert (
        detail(WebhookCreateRequest, {"url": "https://a.test", "eventTypes": ["sms.sent"]}).field
        == "eventTypes[0]"
    )
    assert (
        detail(WebhookCreateRequest, {"url": "not a url", "eventTypes": ["form.received"]}).field
        == "url"
    )
    assert (
        detail(
            WebhookCreateRequest,
            {"url": "https://a.test", "eventTypes": ["form.received"], "headers": {"X": 1}},
        ).field
        == "headers.X"
    )
    # Headers an HTTP request cannot carry: refused here, not failing every delivery.
    for headers, field in (
        ({"X Key": "1"}, "headers.X Key"),
        ({"": "1"}, "headers"),
        ({"X-Key": "clé"}, "headers.X-Key"),
        ({"X-Key": "a\r\nInjected: 1"}, "headers.X-Key"),
        ({"X-Key": " padded"}, "headers.X-Key"),
    ):
        body = {"url": "https://a.test", "eventTypes": ["form.received"], "headers": headers}
        assert detail(WebhookCreateRequest, body).field == field, headers
    sendable = {"X-Api-Key": "k1 k2", "X-Tab": "a\tb", "X-Empty": "", "Authorization": "Bearer t"}
    body = {"url": "https://a.test", "eventTypes": ["form.received"], "headers": sendable}
    assert WebhookCreateRequest.model_validate(body).headers == sendable


@pytest.mark.parametrize(
    ("headers", "field"),
    [
        ({"Transfer-Encoding": "chunked"}, "headers.Transfer-Encoding"),
        ({"Host": "internal.example"}, "headers.Host"),
        ({"content-length": "5"}, "headers.content-length"),
        ({"CONNECTION": "close"}, "headers.CONNECTION"),
        ({"Upgrade": "h2c"}, "headers.Upgrade"),
        ({"TE": "trailers"}, "headers.TE"),
        ({"Trailer": "X-A"}, "headers.Trailer"),
        ({"Keep-Alive": "timeout=5"}, "headers.Keep-Alive"),
        ({"Proxy-Authorization": "Basic x"}, "headers.Proxy-Authorization"),
        ({"proxy-connection": "close"}, "headers.proxy-connection"),
        ({"Humanwire-Signature": "t=1,v1=0"}, "headers.Humanwire-Signature"),
        ({"humanwire-event-id": "e"}, "headers.humanwire-event-id"),
        ({"X-A": "a\r\nX-Injected: 1"}, "headers.X-A"),
        ({"X-A": "a\nb"}, "headers.X-A"),
        ({"X-A": "café"}, "headers.X-A"),
        ({"X-A": "\x00"}, "headers.X-A"),
        ({"X-A": "\x7f"}, "headers.X-A"),
        ({"X-A": "\tlead"}, "headers.X-A"),
        ({"X-A": "trail "}, "headers.X-A"),
        ({"X A": "1"}, "headers.X A"),
        ({"X:A": "1"}, "headers.X:A"),
        ({"X\r\nY": "1"}, "headers.X\r\nY"),
        ({"é": "1"}, "headers.é"),
        ({"(x)": "1"}, "headers.(x)"),
        ({"": "1"}, "headers"),
        ({"Authorization": "Bearer a", "authorization": "Bearer b"}, "headers.authorization"),
    ],
)
def test_webhook_headers_must_be_sendable(headers: dict[str, str], field: str) -> None:
    """At registration, not at each delivery: names are tokens, values visible ASCII,
    and what the HTTP client or the service sets cannot be given (case-insensitive)."""
    body = {"url": "https://a.test", "eventTypes": ["form.received"], "headers": headers}
    refused = detail(WebhookCreateRequest, body)
    assert (refused.code, refused.field) == ("invalid_request", field)
    assert list(headers)[-1] in refused.message
    ok = {"Authorization": "Bearer t", "X-Custom_1.v2": 'a b ~!"#'}
    accepted = WebhookCreateRequest.model_validate({**body, "headers": ok})
    assert accepted.headers == ok


def test_sandbox_models() -> None:
    reply = SandboxReplyRequest.model_validate(
        {"channel": "sms", "from": TO, "to": "+12025550199", "body": "yes"}
    )
    assert reply.to_wire() == {"channel": "sms", "from": TO, "to": "+12025550199", "body": "yes"}
    assert (
        detail(SandboxReplyRequest, {"channel": "call", "from": TO, "to": TO, "body": "x"}).field
        == "channel"
    )
    delivery = SandboxDelivery.model_validate(
        {
            "id": "d",
            "channel": "call",
            "kind": "call",
            "to": TO,
            "text": "prompt",
            "createdAt": "2026-01-01T12:00:00Z",
        }
    )
    assert delivery.interaction_id is None and delivery.created_at.year == 2026


# -- events and interaction status ----------------------------------------------------------------


def test_event_union_parses_each_event_type() -> None:
    message = event_adapter.validate_json(
        b'{"eventType":"message.received","payload":{"interactionId":"i","medium":"slack",'
        b'"from":"U0HUMAN0001","to":"T0SHARED01","body":"ok","mediaUrls":["http://x/1.png"]}}'
    )
    assert isinstance(message, MessageReceivedEvent) and message.payload.media_urls == [
        "http://x/1.png"
    ]
    form_event = event_adapter.validate_python(
        {"eventType": "form.received", "payload": {"interactionId": "i", "values": {"a": "b"}}}
    )
    assert form_event.event_type == "form.received"
    call_event = event_adapter.validate_python(
        {
            "eventType": "call.conversation.ended",
            "payload": {"interactionId": "c", "summary": "s", "from": "+1", "to": "+2"},
        }
    )
    assert isinstance(call_event, CallConversationEndedEvent)
    assert call_event.payload.summary == "s"
    assert message.to_wire()["payload"]["from"] == "U0HUMAN0001"


@pytest.mark.parametrize(
    "data",
    [
        {"eventType": "message.sent", "payload": {}},
        {"payload": {}},
        {
            "eventType": "message.received",
            "payload": {"medium": "fax", "from": "a", "to": "b", "body": "c"},
        },
        {"eventType": "form.received", "payload": {"interactionId": "i", "values": {"a": 1}}},
    ],
)
def test_event_union_refuses_bad_events(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        event_adapter.validate_python(data)


def test_interaction_status_with_and_without_result() -> None:
    pending = InteractionStatus.model_validate(
        {
            "interactionId": "i",
            "status": "pending",
            "createdAt": "2026-01-01T12:00:00Z",
            "kind": "form",
            "channel": "whatsapp",
            "later": True,
        }
    )
    assert pending.result is None and not pending.ended
    assert pending.to_wire()["createdAt"] == "2026-01-01T12:00:00Z"
    ended = InteractionStatus.model_validate(
        {
            "interactionId": "i",
            "status": "ended",
            "createdAt": "2026-01-01T12:00:00.250Z",
            "kind": "form",
            "channel": "sms",
            "result": {
                "eventType": "form.received",
                "payload": {"interactionId": "i", "values": {"a": "b"}},
            },
        }
    )
    assert ended.ended and ended.result is not None and ended.result.event_type == "form.received"
    assert ended.to_wire()["createdAt"] == "2026-01-01T12:00:00.250Z"


# -- error details ---------------------------------------------------------------------------------


def test_field_path_rendering() -> None:
    assert (
        field_path(("fields", 2, "validations", 0, "pattern")) == "fields[2].validations[0].pattern"
    )
    assert field_path(("own_number", "template", "id")) == "template.id"
    assert field_path(("fields", 1), "options") == "fields[1].options"
    assert field_path((), "waitTime") == "waitTime"
    assert field_path(()) is None


def test_model_level_rules_report_their_own_field() -> None:
    error = detail(SMSFormRequest, form(fields=[TEXT, {"id": "s", "label": "S", "type": "select"}]))
    assert error.field == "fields[1].options"
    assert error.message.startswith("options:")


def test_error_detail_round_trips_as_the_error_body() -> None:
    error = detail(SMSMessageRequest, {"message": "x"})
    assert error.model_dump() == {
        "code": "invalid_request",
        "message": "to is required (or person: a person's id, per_…, in its place)",
        "field": "to",
    }
