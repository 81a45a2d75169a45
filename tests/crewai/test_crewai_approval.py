"""Approval of tool calls in a Crew, against the real service: on CrewAI's tool-call hooks
(``require_approval``) and by wrapping the tool (``approval_tool``). Approved, the call runs
once; rejected, it does not run and the model reads the person's comment; an approval that
cannot be requested refuses the call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from crewai.hooks import get_after_tool_call_hooks, get_before_tool_call_hooks
from crewai.tools import BaseTool, tool
from crewai_helpers import NativeLLM, ScriptedLLM, kickoff

from approval_support import approval_link
from framework_support import PAY, forms
from humanwire import HumanWire
from humanwire.approval import Approver
from humanwire.crewai import ToolApproval, approval_tool, require_approval
from humanwire.testing import RunningService, ScriptedHuman


@pytest.fixture
def ran() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def payment(ran: list[dict[str, Any]]) -> BaseTool:
    @tool("send_payment")
    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        ran.append({"amount": amount, "to": to})
        return f"sent {amount} to {to}"

    return send_payment


@pytest.fixture
def gate(humanwire_client: HumanWire) -> Iterator[ToolApproval]:
    with require_approval(tools=["send_payment"], client=humanwire_client, wait_time=10) as hooks:
        yield hooks


def test_approved_the_call_runs_once(
    gate: ToolApproval, payment: BaseTool, ran: list[dict[str, Any]], human: ScriptedHuman
) -> None:
    filled = human.decide_approval("approve", "fine")

    output = kickoff(ScriptedLLM(model="fake", steps=[PAY]), [payment])

    assert output.raw == "sent 50 to bob"
    assert ran == [{"amount": 50, "to": "bob"}]
    assert approval_link(filled.wait(5).text)
    assert len(forms(human)) == 1
    [decision] = gate.decisions
    assert decision.approved and decision.comment == "fine"


def test_rejected_the_model_reads_the_comment(
    gate: ToolApproval, payment: BaseTool, ran: list[dict[str, Any]], human: ScriptedHuman
) -> None:
    human.decide_approval("reject", "not this quarter")
    llm = ScriptedLLM(model="fake", steps=[PAY])

    kickoff(llm, [payment])

    assert ran == []
    assert llm.observations == [
        "send_payment was not run: a human rejected it. Reason: not this quarter"
    ]


def test_rejected_on_the_native_path_too(
    gate: ToolApproval, payment: BaseTool, ran: list[dict[str, Any]], human: ScriptedHuman
) -> None:
    human.decide_approval("reject", "wrong account")
    llm = NativeLLM(model="fake", steps=[PAY])

    output = kickoff(llm, [payment])

    assert ran == []
    assert output.raw == "send_payment was not run: a human rejected it. Reason: wrong account"


def test_no_decision_in_time_rejects_and_says_so(
    humanwire_client: HumanWire,
    payment: BaseTool,
    ran: list[dict[str, Any]],
    human: ScriptedHuman,
) -> None:
    silent = human.stay_silent()
    llm = ScriptedLLM(model="fake", steps=[PAY])
    with require_approval(tools=[payment], client=humanwire_client, wait_time=1):
        kickoff(llm, [payment])
    silent.wait(5)
    assert ran == []
    assert llm.observations == [
        "send_payment was not run: no approval decision arrived in time "
        "(timeout; rejected by default)."
    ]


def test_an_edit_is_no_longer_offered(humanwire_client: HumanWire) -> None:
    # An approval request is about the call as asked (its digest binds the decision).
    with pytest.raises(ValueError, match="allow_edit"):
        Approver(humanwire_client, wait_time=10, allow_edit=True)


def test_an_approval_that_cannot_be_requested_refuses_the_call(
    humanwire_service: RunningService, payment: BaseTool, ran: list[dict[str, Any]]
) -> None:
    # A key the service refuses: the request fails, and CrewAI would run the tool if the
    # hook raised.
    bad = HumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    llm = ScriptedLLM(model="fake", steps=[PAY])
    with require_approval(tools=["send_payment"], client=bad, wait_time=5):
        kickoff(llm, [payment])
    assert ran == []
    [observation] = llm.observations
    assert observation.startswith(
        "send_payment was not run: its approval could not be requested (humanwire: 401 "
    )


def test_only_the_named_tools_and_calls_are_gated(
    humanwire_client: HumanWire,
    payment: BaseTool,
    ran: list[dict[str, Any]],
    human: ScriptedHuman,
) -> None:
    @tool("lookup")
    def lookup(query: str) -> str:
        """Look something up."""
        return f"found {query}"

    def large(context: Any) -> bool:
        return bool(context.tool_input["amount"] > 100)

    llm = ScriptedLLM(model="fake", steps=[("lookup", {"query": "bob"}), PAY])
    with require_approval(tools=["send_payment"], when=large, client=humanwire_client):
        output = kickoff(llm, [lookup, payment])

    assert llm.observations == ["found bob", "sent 50 to bob"]
    assert output.raw == "sent 50 to bob"
    assert human.deliveries() == []  # neither asked about


def test_unregistered_the_tools_run_ungated(
    humanwire_client: HumanWire, payment: BaseTool, ran: list[dict[str, Any]]
) -> None:
    before, after = len(get_before_tool_call_hooks()), len(get_after_tool_call_hooks())
    hooks = require_approval(tools=["send_payment"], client=humanwire_client)
    assert len(get_before_tool_call_hooks()) == before + 1
    hooks.unregister()
    assert (len(get_before_tool_call_hooks()), len(get_after_tool_call_hooks())) == (before, after)

    kickoff(ScriptedLLM(model="fake", steps=[PAY]), [payment])
    assert ran == [{"amount": 50, "to": "bob"}]


# --- the wrapper --------------------------------------------------------------------------


def test_a_wrapped_tool_asks_then_runs(
    humanwire_client: HumanWire,
    payment: BaseTool,
    ran: list[dict[str, Any]],
    human: ScriptedHuman,
) -> None:
    human.decide_approval("approve")
    wrapped = approval_tool(payment, client=humanwire_client, wait_time=10)
    assert (wrapped.name, wrapped.description) == (payment.name, payment.description)
    assert wrapped.args_schema is payment.args_schema

    output = kickoff(ScriptedLLM(model="fake", steps=[PAY]), [wrapped])

    assert output.raw == "sent 50 to bob"
    assert ran == [{"amount": 50, "to": "bob"}]
    assert len(forms(human)) == 1


def test_a_wrapped_tool_rejected_returns_the_comment(
    humanwire_client: HumanWire,
    payment: BaseTool,
    ran: list[dict[str, Any]],
    human: ScriptedHuman,
) -> None:
    human.decide_approval("reject", "ask finance first")
    wrapped = approval_tool(payment, client=humanwire_client, wait_time=10)
    llm = ScriptedLLM(model="fake", steps=[PAY])

    kickoff(llm, [wrapped])

    assert ran == []
    assert llm.observations == [
        "send_payment was not run: a human rejected it. Reason: ask finance first"
    ]
