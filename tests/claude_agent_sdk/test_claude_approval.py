"""People approve a Claude Agent SDK session's tool calls in the run, on ``can_use_tool``
(the bundled CLI against a scripted model on loopback; the real service and the scripted
human): the gated tool runs once on approval, never on rejection (the model reads the
comment), a timeout is a rejection the model reads, and a service that cannot be asked
(stopped, a bad key) denies the call with the reason. Idempotency keys are per session and
bound to the action: a tool use id reused by another session is asked afresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claude_helpers import FakeMessagesAPI, ScriptedModel, once, options, pay_server, ran

from framework_support import PAY, PHONE, forms
from humanwire import AsyncHumanWire
from humanwire.claude_agent_sdk import HumanApprovals, run_session
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.service import start_test_service


def gate(client: AsyncHumanWire, **approver: Any) -> HumanApprovals:
    return HumanApprovals(["send_payment"], client=client, to=PHONE, **approver)


async def run(model: ScriptedModel, approvals: HumanApprovals, directory: Path) -> Any:
    with FakeMessagesAPI(model) as api:
        server = pay_server(directory / "ran.log")
        opts = approvals.options(options(api, directory, mcp_servers={"pay": server}))
        return await run_session(opts, "Pay Bob 50")


async def test_an_approved_call_runs_once(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    human.decide_approval("approve", "Go")
    model = once(*PAY)
    approvals = gate(async_humanwire_client)
    result = await run(model, approvals, tmp_path)
    assert ran(tmp_path / "ran.log") == ["50 bob"]
    assert model.results == ["sent 50 to bob"]
    assert result.result == "FINAL: sent 50 to bob"
    (delivery,) = forms(human)
    assert "send_payment" in delivery.text
    assert [d.decision for d in approvals.decisions] == ["approve"]


async def test_a_rejection_reaches_the_model_with_the_comment(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    human.decide_approval("reject", "too expensive")
    model = once(*PAY)
    result = await run(model, gate(async_humanwire_client), tmp_path)
    assert ran(tmp_path / "ran.log") == []
    (returned,) = model.results
    assert "mcp__pay__send_payment was not run: a human rejected it. Reason: too expensive" in (
        returned
    )
    assert result.permission_denials


async def test_nobody_deciding_in_time_is_a_rejection_never_an_error(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    model = once(*PAY)
    result = await run(model, gate(async_humanwire_client, wait_time=1), tmp_path)
    assert ran(tmp_path / "ran.log") == []
    (returned,) = model.results
    assert "no approval decision arrived in time (timeout" in returned
    assert result.result == f"FINAL: {returned}"


async def test_a_bad_key_denies_the_call_with_the_reason(
    humanwire_service: RunningService, tmp_path: Path
) -> None:
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        model = once(*PAY)
        await run(model, gate(client), tmp_path)
    finally:
        await client.aclose()
    assert ran(tmp_path / "ran.log") == []
    (returned,) = model.results
    assert "send_payment was not run: its approval could not be requested" in returned


async def test_a_stopped_service_denies_the_call(tmp_path: Path) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        model = once(*PAY)
        await run(model, gate(client), tmp_path)
    finally:
        await client.aclose()
    assert ran(tmp_path / "ran.log") == []
    (returned,) = model.results
    assert "send_payment was not run: its approval could not be requested" in returned


async def test_a_tool_use_id_reused_by_another_session_is_asked_afresh(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # The scripted model calls toolu_0_0 in every session: the key holds the session id
    # too, so the second session gets an approval of its own, not the first's (used).
    human.decide_approval("approve")
    human.decide_approval("approve")
    approvals = gate(async_humanwire_client)
    for _ in range(2):
        result = await run(once(*PAY), approvals, tmp_path)
        assert result.result == "FINAL: sent 50 to bob"
    assert ran(tmp_path / "ran.log") == ["50 bob", "50 bob"]
    assert len(forms(human)) == 2
