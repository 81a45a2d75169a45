"""The Approvals guide's client code runs as written (docs/guides/approvals.md): the
two-of-two approval is decided on its pages, consumed, and its action run once; the
three patterns are sent and stay open. (Its LangChain block runs in
tests/langchain/test_lc_approvals_guide.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from docs_support import block
from humanwire import HumanWire
from humanwire.testing import ScriptedHuman


@pytest.mark.usefixtures("service_environment")
def test_the_client_block_runs_the_approved_action_once(
    capsys: pytest.CaptureFixture[str], human: ScriptedHuman
) -> None:
    code = block("guides/approvals.md", "The client", "python")
    # Both approvers decide on the page their text links to: two of two.
    decisions = [
        human.decide_approval("approve", "Fine by me", to="+14155550123"),
        human.decide_approval("approve", to="U0123ABCD", channel="slack"),
    ]
    namespace: dict[str, Any] = {}
    exec(compile(code, "approvals-client", "exec"), namespace)
    for decided in decisions:
        decided.wait(10)
    approval = namespace["approval"]
    assert approval.decision == "approved"
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Wired $4,200 to ACME Ltd."
    # The audit log, printed: the request, both decisions, the outcome and the consumption.
    logged = [line.split() for line in out[1:]]
    assert [entry[1] for entry in logged] == [
        "approval.requested",
        "approval.asked",
        "approval.asked",
        "approval.decision",
        "approval.decision",
        "approval.decided",
        "approval.consumed",
    ]
    assert {entry[2] for entry in logged} == {approval.interaction_id}
    client: HumanWire = namespace["client"]
    # The approval was used: a second run of the action would be refused.
    from humanwire import AlreadyConsumedError
    from humanwire.types.approvals import action_digest

    with pytest.raises(AlreadyConsumedError):
        client.approvals.consume(
            approval.interaction_id, action_digest=action_digest(namespace["action"])
        )


@pytest.mark.usefixtures("service_environment")
def test_the_three_patterns_are_sent_and_stay_open(human: ScriptedHuman) -> None:
    code = block("guides/approvals.md", "Three patterns with the client", "python")
    namespace: dict[str, Any] = {}
    exec(compile(code, "approvals-patterns", "exec"), namespace)
    for name in ("two_of_three", "escalated", "reminded"):
        assert namespace[name].status == "pending", name
    # The link approver's page is handed over, not sent.
    assert "/a/" in namespace["two_of_three"].links[0].url


@pytest.mark.usefixtures("service_environment")
def test_the_listing_block_finds_the_open_refunds_page_after_page(
    capsys: pytest.CaptureFixture[str],
) -> None:
    client = HumanWire()
    link = [{"channel": "link", "to": "Dana"}]

    def ask(name: str) -> str:
        action = {"name": name, "arguments": {}}
        made = client.approvals.create(title=name, action=action, approvers=link, follow_up_time=60)
        return made.interaction_id

    # More than a page of 50, so the loop reads a second one; a decided refund and
    # another action's request are left out.
    refunds = [ask("refund") for _ in range(52)]
    ask("deploy")
    decided = client.approvals.get(ask("refund"))
    assert decided.approval_url is not None
    from approval_support import decide_on_page

    decide_on_page(decided.approval_url, "reject")
    code = block("guides/approvals.md", "Listing requests", "python")
    namespace: dict[str, Any] = {}
    exec(compile(code, "approvals-listing", "exec"), namespace)
    assert [a.interaction_id for a in namespace["open_refunds"]] == refunds
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == refunds
