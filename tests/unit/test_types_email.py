"""The email request bodies: ``to`` checked with email-validator (400 ``invalid_request``
naming ``to``), a one-line ``subject``, the windows and metadata of the other channels."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from humanwire.types import EmailFormRequest, EmailMessageRequest
from humanwire.types.errors import detail_from_validation_error


def _error(model: Any, body: dict[str, Any]) -> tuple[str, str | None, str]:
    with pytest.raises(ValidationError) as refused:
        model.model_validate(body)
    detail = detail_from_validation_error(refused.value)
    return detail.code, detail.field, detail.message


def test_a_message_request_on_the_wire() -> None:
    request = EmailMessageRequest.model_validate(
        {
            "to": "Ada.Lovelace@Example.COM",
            "subject": "Release",
            "message": "Ship it?",
            "waitTime": 30,
            "followUpTime": 600,
            "metadata": {"ticket": "42"},
        }
    )
    assert request.to == "Ada.Lovelace@example.com"  # the domain normalized, the mailbox kept
    assert request.to_wire() == {
        "to": "Ada.Lovelace@example.com",
        "subject": "Release",
        "message": "Ship it?",
        "waitTime": 30,
        "followUpTime": 600,
        "metadata": {"ticket": "42"},
    }
    bare = EmailMessageRequest(to="ada@example.com", message="hi")
    assert bare.subject is None and bare.to_wire() == {"to": "ada@example.com", "message": "hi"}
    assert EmailMessageRequest.model_validate({"to": "zoë@bücher.example", "message": "x"}).to


@pytest.mark.parametrize(
    "to",
    [
        "ada",
        "ada@",
        "@example.com",
        "ada@example",
        "ada@@example.com",
        "ada example@example.com",
        "ada@localhost",
        "a" * 250 + "@example.com",
        "",
        "   ",
        42,
        None,
        ["ada@example.com"],
        "ada@example.com\r\nBcc: victim@example.com",
    ],
)
def test_a_bad_address_is_invalid_request_naming_to(to: Any) -> None:
    for model in (EmailMessageRequest, EmailFormRequest):
        body: dict[str, Any] = {"to": to, "message": "x"}
        if model is EmailFormRequest:
            body["title"] = "Check"
            body["fields"] = [{"id": "ok", "type": "checkbox", "label": "OK?"}]
        code, field, message = _error(model, body)
        assert (code, field) == ("invalid_request", "to"), message
        assert message.startswith("to must be an email address")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"subject": "a\r\nBcc: victim@example.com"}, "subject"),
        ({"subject": ""}, "subject"),
        ({"subject": "x" * 201}, "subject"),
        ({"message": ""}, "message"),
        ({"waitTime": 0}, "waitTime"),
        ({"followUpTime": 60001}, "followUpTime"),
        ({"cc": "bob@example.com"}, "cc"),
    ],
)
def test_the_other_fields_are_checked(body: dict[str, Any], field: str) -> None:
    code, named, _message = _error(
        EmailMessageRequest, {"to": "ada@example.com", "message": "x", **body}
    )
    assert (code, named) == ("invalid_request", field)


def test_a_form_request_is_the_sms_form_with_an_address() -> None:
    request = EmailFormRequest.model_validate(
        {
            "to": "ada@example.com",
            "title": "Expenses",
            "subject": "Expenses",
            "message": "Please fill in {{url}}",
            "fields": [{"id": "amount", "type": "text", "label": "Amount"}],
            "waitTime": 60,
        }
    )
    assert request.to == "ada@example.com" and request.subject == "Expenses"
    assert request.to_wire()["fields"][0]["id"] == "amount"
    code, field, _message = _error(
        EmailFormRequest,
        {"to": "ada@example.com", "title": "T", "fields": [{"id": "x", "type": "nope"}]},
    )
    assert code == "invalid_request" and field is not None and field.startswith("fields[0]")
