"""Unit tests of the framework-neutral approval module: form, decisions, recipients."""

from __future__ import annotations

import json

import pytest

from humanwire.approval import (
    ApprovalRequest,
    build_approval_form,
    check_follow_up_time,
    check_wait_time,
    decision_from_response,
    decision_from_values,
    is_local_service,
    resolve_recipient,
    timeout_decision,
)
from humanwire.types import FormResponse, SMSFormRequest


def test_form_has_decision_comment_and_readable_arguments() -> None:
    request = ApprovalRequest("send_email", {"to": "a@example.com", "count": 3})
    title, fields = build_approval_form(request)
    assert title == "Approve send_email?"
    assert [f.id for f in fields] == ["decision", "comment"]
    decision = fields[0]
    assert decision.type == "select" and decision.required
    assert [o.value for o in decision.options or []] == ["approve", "reject"]
    assert "to: a@example.com" in (decision.helper_text or "")
    assert "count: 3" in (decision.helper_text or "")
    assert fields[1].type == "textarea" and not fields[1].required
    # The service accepts it as a form: one definition, validated the same way.
    SMSFormRequest(to="+12025550100", title=title, fields=fields, wait_time=1)


def test_form_with_edit_and_respond() -> None:
    request = ApprovalRequest("pay", {"amount": 10})
    _, fields = build_approval_form(request, allow_edit=True, allow_respond=True)
    assert [o.value for o in fields[0].options or []] == ["approve", "reject", "edit", "respond"]
    arguments = fields[2]
    assert arguments.id == "arguments"
    assert json.loads(arguments.placeholder or "") == {"amount": 10}


def test_long_values_are_cut() -> None:
    _, fields = build_approval_form(ApprovalRequest("x", {"blob": "a" * 5000}))
    assert len(fields[0].helper_text or "") < 700


@pytest.mark.parametrize(
    ("values", "approved", "kind", "comment", "arguments"),
    [
        ({"decision": "approve"}, True, "approve", None, None),
        ({"decision": "approve", "comment": " fine "}, True, "approve", "fine", None),
        ({"decision": "reject", "comment": "too risky"}, False, "reject", "too risky", None),
        ({"decision": "respond", "comment": "It is 42"}, False, "respond", "It is 42", None),
        ({"decision": "edit", "arguments": ""}, True, "edit", None, None),
        ({"decision": "edit", "arguments": '{"a": 2}'}, True, "edit", None, {"a": 2}),
    ],
)
def test_decision_from_values(
    values: dict[str, str],
    approved: bool,
    kind: str,
    comment: str | None,
    arguments: dict[str, int] | None,
) -> None:
    decision = decision_from_values(values, interaction_id="i-1")
    assert decision.approved is approved
    assert decision.decision == kind
    assert decision.comment == comment
    assert decision.arguments == arguments
    assert decision.timed_out is False
    assert decision.interaction_id == "i-1"


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]"])
def test_unreadable_edit_fails_closed(bad: str) -> None:
    decision = decision_from_values({"decision": "edit", "arguments": bad, "comment": "c"})
    assert decision.approved is False
    assert decision.decision == "reject"
    assert decision.comment is not None and "not run" in decision.comment
    assert decision.comment.endswith("c")


def test_unknown_decision_is_a_rejection() -> None:
    decision = decision_from_values({"decision": "maybe"})
    assert decision.approved is False and decision.decision == "reject"
    assert "maybe" in (decision.comment or "")


def test_timeout_is_not_a_rejection() -> None:
    rejected = timeout_decision("reject")
    assert rejected.timed_out and rejected.decision == "timeout" and not rejected.approved
    assert "timeout" in rejected.text and "Rejected by a human" not in rejected.text
    assert timeout_decision("approve").approved


def test_decision_from_response() -> None:
    answered = FormResponse(
        interaction_id="i", status="ended", responded=True, values={"decision": "approve"}
    )
    assert decision_from_response(answered).approved
    silent = FormResponse(interaction_id="i", status="pending", responded=False, response="x")
    assert decision_from_response(silent).timed_out
    assert decision_from_response(silent, default_on_timeout="approve").approved


def test_bounds() -> None:
    assert check_wait_time(1) == 1 and check_wait_time(None) is None
    for bad in (0, 601, True, "5"):
        with pytest.raises(ValueError, match="wait_time"):
            check_wait_time(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="follow_up_time"):
        check_follow_up_time(60001)


def test_recipient_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUMANWIRE_BASE_URL", raising=False)
    monkeypatch.delenv("HUMANWIRE_SMS_TO", raising=False)
    monkeypatch.delenv("HUMANWIRE_SLACK_TO", raising=False)
    assert resolve_recipient("sms", "+442079460001") == "+442079460001"
    assert resolve_recipient("sms") == "+12025550100"
    assert resolve_recipient("slack") == "U0HUMAN0001"
    monkeypatch.setenv("HUMANWIRE_SMS_TO", "+442079460002")
    assert resolve_recipient("sms") == "+442079460002"
    monkeypatch.delenv("HUMANWIRE_SMS_TO")
    monkeypatch.setenv("HUMANWIRE_BASE_URL", "http://127.0.0.1:9999")
    assert is_local_service()
    assert resolve_recipient("sms") == "+12025550100"
    monkeypatch.setenv("HUMANWIRE_BASE_URL", "https://api.example.com")
    assert not is_local_service()
    with pytest.raises(ValueError, match="HUMANWIRE_SMS_TO") as refused:
        resolve_recipient("sms")
    # The default human applies on a loopback HUMANWIRE_BASE_URL too, and the error says so
    # (it used to say "only without HUMANWIRE_BASE_URL", which the code above contradicts).
    assert "humanwire serve on a loopback HUMANWIRE_BASE_URL" in str(refused.value)
    assert "only without" not in str(refused.value)
    with pytest.raises(ValueError, match="HUMANWIRE_WHATSAPP_TO"):
        resolve_recipient("whatsapp")


# --- approval requests ------------------------------------------------------------------
def _record(**fields: object) -> object:
    from humanwire.types.approvals import Approval

    body = {"interactionId": "i-9", "status": "ended", "actionDigest": "sha256:" + "a" * 64}
    return Approval.model_validate({**body, **fields})


def _decided(decision: str, comment: str | None = None) -> dict[str, object]:
    return {
        "approver": {"channel": "sms", "to": "+12025550100"},
        "decision": decision,
        "comment": comment,
        "at": "2026-11-25T12:00:00Z",
        "via": "page",
    }


def test_decision_from_approval_reads_the_record() -> None:
    from humanwire.approval import decision_from_approval

    assert decision_from_approval(_record(status="pending")) is None  # type: ignore[arg-type]
    approved = decision_from_approval(
        _record(decision="approved", decisions=[_decided("approve", "ok")])  # type: ignore[arg-type]
    )
    assert approved is not None and approved.approved and approved.decision == "approve"
    assert approved.comment == "ok" and approved.action_digest == "sha256:" + "a" * 64
    rejected = decision_from_approval(
        _record(decision="rejected", decisions=[_decided("approve"), _decided("reject", "no")])  # type: ignore[arg-type]
    )
    assert rejected is not None and not rejected.approved and rejected.comment == "no"
    by_default = decision_from_approval(_record(decision="approved", timedOut=True))  # type: ignore[arg-type]
    assert by_default is not None and by_default.approved and by_default.decision == "timeout"
    undecided = decision_from_approval(_record(decision=None))  # type: ignore[arg-type]
    assert undecided is not None and not undecided.approved and undecided.timed_out


def test_the_approver_binds_the_request_to_the_action(monkeypatch: pytest.MonkeyPatch) -> None:
    from humanwire.approval import Approver, action_digest_of
    from humanwire.types.approvals import action_digest

    monkeypatch.delenv("HUMANWIRE_BASE_URL", raising=False)
    approver = Approver(
        to="+12025550100",
        wait_time=30,
        on_timeout="none",
        escalation=[{"after": 60, "approvers": [{"channel": "slack", "to": "U0123ABCD"}]}],
        quorum=2,
    )
    request = ApprovalRequest("pay", {"amount": 10, "when": object()})
    kwargs = approver.approval_kwargs(request, metadata={"run": "1"})
    assert kwargs["action"]["name"] == "pay" and kwargs["action"]["arguments"]["amount"] == 10
    assert isinstance(kwargs["action"]["arguments"]["when"], str)  # as its text
    assert action_digest_of(request) == action_digest(kwargs["action"])
    assert kwargs["approvers"] == [{"channel": "sms", "to": "+12025550100"}]
    assert kwargs["quorum"] == 2 and kwargs["on_timeout"] == "none"
    assert kwargs["wait_time"] == 30 and kwargs["metadata"] == {"run": "1"}
    paused = approver.approval_kwargs(request, wait=False, window=600)
    assert "wait_time" not in paused and paused["follow_up_time"] == 600
