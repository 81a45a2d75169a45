"""The OpenAPI document says what the service enforces: requests generated from it
(schemathesis, in its positive mode: bodies, query strings and headers the document
allows) are never refused with a 400, except for the rules docs/reference/http-api.md
lists as beyond JSON Schema (``UNDECLARABLE`` below). A rule the service gains without the document
saying it fails here.

Every request goes to the real app (its ASGI interface, as every HTTP test here) on
SQLite; the rules are the wire models' and the routes', the same on either store. Sends
carry ``Prefer: respond-async``, so a generated ``waitTime`` does not hold the test, and
``?wait=`` is scaled down a thousandfold (0 to 60 seconds becomes 0 to 0.06)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import phonenumbers
import pytest
import schemathesis
from http_support import AppUnderTest, fast_config, running_app
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig
from schemathesis.generation import GenerationMode

from humanwire.server.http.openapi import build_openapi
from humanwire.server.routes import api_operations

EXAMPLES = 40
"""Requests per operation: about 1,100 in all, under 20 s on a loaded machine."""

# The rules JSON Schema cannot state (docs/reference/http-api.md, "What the document
# states"), as (field, the words of the message) of the 400 the service answers for them.
_APPROVER = r"(escalation\[\d+\]\.)?approvers\[\d+\]"
UNDECLARABLE: list[tuple[str, str]] = [
    # The sender must be one of the account's own (reserved number, installed workspace).
    ("from", "from must be the account's reserved number"),
    ("from", "from must be the account's own (reserved) whatsapp number"),
    ("from", "from must be the shared workspace or a workspace this account installed"),
    # A number the operator offers (GET /numbers/available).
    ("phoneNumber", "is not an available number"),
    # Field ids unique within a form: uniqueItems compares whole fields.
    (r"fields\[\d+\]\.id", "duplicate field id"),
    # The part of ECMA 262's dialect (JSON Schema's "regex" format) that RE2 reads alike,
    # and a form's budget of patterns.
    (r"fields\[\d+\]\.validations(\[\d+\]\.pattern)?", "pattern "),
    # Approval requests: approvers no two alike and at most 20 across the tiers, quorums
    # counted in people (one number is one person), tiers at increasing ``after``, an
    # email address as ``email_validator`` reads it, a digest of numbers JSON-exact.
    (_APPROVER, "is the same approver as"),
    ("escalation", "approvers with the escalation tiers"),
    ("quorum", "quorum is"),
    ("rejectQuorum", "rejectQuorum is"),
    (r"escalation\[\d+\]\.after", "escalation tiers must come at increasing after"),
    (_APPROVER + r"\.to", "to must be an email address"),
    ("action.arguments", "the action is not plain JSON"),
    # A person's addresses no two alike (uniqueItems compares whole addresses: an email
    # address differing only in the case of its domain is the same one).
    (r"addresses\[\d+\]", "is listed twice"),
    # Standing approvals: the actions the service lets be granted ([approvals] grantable),
    # an expiry in the future and within max_grant (the clock's), a person of the account,
    # an exact value's size as JSON and its numbers JSON-exact (as an action's arguments).
    ("actionName", "may not be granted"),
    ("expiresAt", "expiresAt must be"),
    ("grantedBy", "grantedBy: no person"),
    (r"match\..*", "a value is at most"),
    (r"match\..*", "not plain JSON"),
    # An own Telegram bot: a token Telegram accepts, on a service with [telegram].
    ("", "this service has no Telegram bot configured"),
    ("token", "Telegram refused the token"),
    ("token", "this is the shared bot"),
]


def _undeclarable(error: dict[str, Any]) -> bool:
    field = error.get("field") or ""
    message = error.get("message") or ""
    return any(re.fullmatch(pattern, field) and start in message for pattern, start in UNDECLARABLE)


def _valid_numbers() -> list[str]:
    """One valid number per region: ``phonenumbers`` judges validity beyond the pattern
    (declared as ``format: e164``), so the generator draws from numbers it accepts."""
    numbers = []
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        example = phonenumbers.example_number(region)
        if example is not None:
            numbers.append(phonenumbers.format_number(example, phonenumbers.PhoneNumberFormat.E164))
    return numbers


@pytest.fixture(scope="module")
def schema() -> Iterator[Any]:
    # A webhook's or image's URL: a loopback address, never a host on the internet (a
    # generated webhook would be called, and an unresolvable host is a 400 of its own).
    urls = st.from_regex(r"\Ahttps?://127\.0\.0\.1:9(/[a-z0-9]{0,8}){0,2}\Z")
    schemathesis.openapi.format("e164", st.sampled_from(_valid_numbers()))
    schemathesis.openapi.format("uri", urls)
    # An address email-validator accepts (declared as ``format: email``): no special-use
    # domain (``.test``, ``.invalid``), which it refuses as never deliverable.
    emails = st.from_regex(
        r"\A[a-z0-9_+-]{1,20}(\.[a-z0-9_+-]{1,10})?@[a-z0-9]{1,10}\.example\.com\Z"
    )
    schemathesis.openapi.format("email", emails)
    config = SchemathesisConfig.from_dict(
        {
            "generation": {
                # No string carries a NUL (the HTTP API page says so; PostgreSQL cannot store it).
                "allow-x00": False,
                "deterministic": True,
                "allow-extra-parameters": False,
                "with-security-parameters": False,
            }
        }
    )
    document = build_openapi(api_operations(sandbox_enabled=True), "http://127.0.0.1:8765")
    yield schemathesis.openapi.from_dict(document, config=config)
    schemathesis.specs.openapi.formats.unregister_string_format("e164")
    schemathesis.specs.openapi.formats.unregister_string_format("uri")
    schemathesis.specs.openapi.formats.unregister_string_format("email")


@pytest.fixture(name="svc")
async def sqlite_service(tmp_path: Path) -> AsyncIterator[AppUnderTest]:
    # Hundreds of sends of one text to many numbers: no rate limit, no spam guard.
    config = fast_config(
        tmp_path, rate_limit_requests=10**6, spam_recipients=10**6, webhook_max_attempts=1
    )
    async for service in running_app(config):
        yield service


def _cases(operation: Any, fixed_path: dict[str, str]) -> list[Any]:
    cases: list[Any] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed_path or None))
    def collect(case: Any) -> None:
        cases.append(case)

    collect()
    return cases


def _headers(case: Any, number: int) -> dict[str, str]:
    """The generated headers, each ``Idempotency-Key`` made unique (still valid): a key
    drawn twice would answer 409 before the handler ran its own checks."""
    headers = {
        name: value
        for name, value in (case.headers or {}).items()
        if name.lower() != "authorization"
    }
    key = headers.get("Idempotency-Key")
    if key is not None:
        prefix = f"{number}."
        headers["Idempotency-Key"] = (prefix + key[: 255 - len(prefix)]).rstrip(" ")
    return headers


def _query(case: Any) -> dict[str, Any]:
    query: dict[str, Any] = {}
    for name, value in (case.query or {}).items():
        if isinstance(value, dict):  # a deepObject parameter: name[key]=value each
            query.update({f"{name}[{key}]": item for key, item in value.items()})
        else:
            query[name] = value
    wait = query.get("wait")
    if isinstance(wait, (int, float)) and not isinstance(wait, bool):
        query["wait"] = wait / 1000
    return query


async def test_requests_the_document_allows_are_not_refused(svc: AppUnderTest, schema: Any) -> None:
    card = await svc.client.post(
        "/channels", json={"type": "sms", "to": "+12025550100", "waitTime": 1}
    )
    assert card.status_code == 201, card.text
    fixed = {"sendThroughChannel": {"channel_id": card.json()["id"]}}
    refused: dict[tuple[str, str | None, str], list[Any]] = {}
    sent = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        definition = operation.definition.raw
        operation_id = definition["operationId"]
        if operation_id == "streamEvents":  # never ends; its parameters: test_http_events
            continue
        for case in _cases(operation, fixed.get(operation_id, {})):
            headers = _headers(case, sent)
            request: dict[str, Any] = {"params": _query(case), "headers": headers}
            if "requestBody" in definition:
                headers["Prefer"] = "respond-async"
                request["json"] = case.body
            response = await svc.client.request(
                operation.method.upper(), case.formatted_path, **request
            )
            sent += 1
            assert response.status_code < 500, (operation_id, response.text, request)
            if response.status_code != 400:
                continue
            error = response.json()["error"]
            if not _undeclarable(error):
                key = (operation_id, error["field"], error["message"][:100])
                refused.setdefault(key, []).append(request)
    assert sent > 20 * EXAMPLES
    report = [
        f"{len(requests)}x {key}: e.g. {requests[0]!r:.400}"
        for key, requests in sorted(refused.items(), key=lambda item: -len(item[1]))
    ]
    assert not refused, f"{sum(map(len, refused.values()))} allowed requests refused:\n" + (
        "\n".join(report)
    )
