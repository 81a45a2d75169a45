"""The approval tools of the MCP server (``request_approval``, ``consume_approval``)
against the real service, the approvers deciding on the approval page."""

from __future__ import annotations

from typing import Any

from mcp_helpers import PHONE, SLACK, Connect, text

from humanwire._approval_tools import ConsumeApprovalInput, RequestApprovalInput
from humanwire._tooling import plain_json_schema
from humanwire.testing import ScriptedHuman
from humanwire.types.approvals import action_digest
from pg_support import humanwire_config  # noqa: F401  (on each store in turn)

NO_LIMIT: dict[str, Any] = {"client_timeout": None}
REFUND = {"action_name": "refund", "action_arguments": {"order": 1042, "amount": 30}}
REFUND_DIGEST = action_digest({"name": "refund", "arguments": {"order": 1042, "amount": 30}})


def _interaction_id(result_text: str) -> str:
    return result_text.split("interaction_id ", 1)[1].split(",", 1)[0]


async def test_listed_with_their_schemas(connect: Connect) -> None:
    async with connect(**NO_LIMIT) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    request, consume = tools["request_approval"], tools["consume_approval"]
    assert request.input_schema == plain_json_schema(RequestApprovalInput)
    assert consume.input_schema == plain_json_schema(ConsumeApprovalInput)
    assert set(request.input_schema["required"]) == {"title", "action_name"}
    assert set(request.input_schema["properties"]) == {
        "title",
        "description",
        "action_name",
        "action_arguments",
        "approvers",
        "quorum",
        "reject_quorum",
        "escalation",
        "remind_every",
        "wait_time",
        "on_timeout",
    }
    approver = request.input_schema["properties"]["approvers"]["items"]
    assert set(approver["required"]) == {"channel", "to"}
    tier = request.input_schema["properties"]["escalation"]["items"]
    assert set(tier["properties"]) == {"after", "approvers"}
    assert set(consume.input_schema["required"]) == {"interaction_id", "action_digest"}
    for tool in (request, consume):
        assert "Call consume_approval right before performing the approved action" in str(
            tool.description
        )
        assert "do not perform it unless" in str(tool.description)


async def test_quorum_of_two_approved_then_consumed_once(
    connect: Connect, human: ScriptedHuman
) -> None:
    by_phone = human.decide_approval("approve", to=PHONE)
    by_slack = human.decide_approval("approve", "fine", to=SLACK)
    approvers = [{"channel": "sms", "to": PHONE}, {"channel": "slack", "to": SLACK}]
    async with connect(wait_time=20, **NO_LIMIT) as client:
        result = await client.call_tool(
            "request_approval",
            {"title": "Refund order 1042", "approvers": approvers, "quorum": 2, **REFUND},
        )
        await by_phone.async_wait()
        await by_slack.async_wait()
        assert result.is_error is False, text(result)
        decided = text(result)
        assert decided.startswith("Approved.")
        assert f"action_digest {REFUND_DIGEST}" in decided
        interaction_id = _interaction_id(decided)
        claim = {"interaction_id": interaction_id, "action_digest": REFUND_DIGEST}
        first = await client.call_tool("consume_approval", claim)
        second = await client.call_tool("consume_approval", claim)
    assert text(first).startswith(f"The approval {interaction_id} is consumed")
    assert "may run now" in text(first)
    assert text(second).startswith("Do not perform the action")
    assert "consumed before" in text(second)


async def test_rejected(connect: Connect, human: ScriptedHuman) -> None:
    human.decide_approval("reject", "wrong order", to=PHONE)
    async with connect(wait_time=20, **NO_LIMIT) as client:
        result = await client.call_tool("request_approval", {"title": "Refund", **REFUND})
        decided = text(result)
        assert decided.startswith("Rejected: do not perform the action.")
        claim = {"interaction_id": _interaction_id(decided), "action_digest": REFUND_DIGEST}
        refused = await client.call_tool("consume_approval", claim)
    assert text(refused).startswith("Do not perform the action")
    assert "is not approved" in text(refused)
    # A rejection is final: the model is not sent back to poll it.
    assert "rejected). That is final" in text(refused)
    assert "again later" not in text(refused)


async def test_consuming_an_undecided_approval_says_to_look_again_later(
    connect: Connect, human: ScriptedHuman
) -> None:
    human.stay_silent(to=PHONE)
    async with connect(wait_time=60, client_timeout=7) as client:
        result = await client.call_tool("request_approval", {"title": "Refund", **REFUND})
        claim = {"interaction_id": _interaction_id(text(result)), "action_digest": REFUND_DIGEST}
        refused = await client.call_tool("consume_approval", claim)
    assert text(refused).startswith("Do not perform the action yet")
    assert "still pending" in text(refused) and "again later" in text(refused)


async def test_undecided_under_a_client_limit_says_how_to_check_later(
    connect: Connect, human: ScriptedHuman
) -> None:
    human.stay_silent(to=PHONE)
    async with connect(wait_time=60, client_timeout=7) as client:
        result = await client.call_tool("request_approval", {"title": "Refund", **REFUND})
    assert result.is_error is False
    assert text(result).startswith("No decision yet (interaction_id ")
    assert "call consume_approval with these later" in text(result)


async def test_escalation_asks_the_next_tier(connect: Connect, human: ScriptedHuman) -> None:
    human.stay_silent(to=PHONE)
    escalated = human.decide_approval("approve", to=SLACK)
    escalation = [{"after": 1, "approvers": [{"channel": "slack", "to": SLACK}]}]
    async with connect(wait_time=20, **NO_LIMIT) as client:
        result = await client.call_tool(
            "request_approval", {"title": "Refund", "escalation": escalation, **REFUND}
        )
    await escalated.async_wait()
    assert text(result).startswith("Approved."), text(result)


async def test_bad_approvers_are_tool_errors(connect: Connect) -> None:
    async with connect(**NO_LIMIT) as client:
        bad_number = await client.call_tool(
            "request_approval",
            {"title": "Refund", "approvers": [{"channel": "sms", "to": "nope"}], **REFUND},
        )
        too_many = await client.call_tool(
            "request_approval", {"title": "Refund", "quorum": 2, **REFUND}
        )
    assert bad_number.is_error is True
    assert text(bad_number).startswith("humanwire: ")
    assert "E.164" in text(bad_number)
    assert too_many.is_error is True
    assert "quorum" in text(too_many)
