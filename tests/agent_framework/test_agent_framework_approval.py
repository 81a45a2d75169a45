"""Microsoft Agent Framework's approval requests (``approval_mode="always_require"``)
answered by people in the run (``HumanApprovals.arun``), against the real service over
loopback with the scripted human, through ``POST /approvals``: the gated function runs
once on approval, never on rejection (the model reading the comment), never when nobody
decides; and service errors failing closed, the model told why."""

from __future__ import annotations

from pathlib import Path

from agent_framework_helpers import agent, gated_tools, once, ran, scripted

from framework_support import PAY, PHONE, forms
from humanwire import AsyncHumanWire
from humanwire.agent_framework import HumanApprovals
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.service import start_test_service

REJECTED = "Error: Tool call invocation was rejected by user."
"""What the framework itself tells the model of a refused call."""


def humans(client: AsyncHumanWire, **options: object) -> HumanApprovals:
    return HumanApprovals(
        client=client, to=PHONE, follow_up_time=options.pop("window", 30), **options
    )


async def test_an_approved_call_runs_once(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    human.decide_approval("approve", "Go")
    chat = once(*PAY)
    result = await humans(async_humanwire_client).arun(agent(chat, gated_tools(log)), "pay")
    assert result.text == "FINAL: sent 50 to bob"
    assert ran(log) == ["50 bob"]
    (delivery,) = forms(human)
    assert "send_payment" in delivery.text


async def test_a_rejection_reaches_the_model_with_the_comment(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    human.decide_approval("reject", "too expensive")
    chat = once(*PAY)
    await humans(async_humanwire_client).arun(agent(chat, gated_tools(log)), "pay")
    assert ran(log) == []
    # The framework's own refusal as the call's result, and why beside it.
    assert sorted(chat.results) == [
        REJECTED,
        "send_payment was not run: a human rejected it. Reason: too expensive",
    ]


async def test_nobody_deciding_in_time_is_a_rejection_never_an_error(
    async_humanwire_client: AsyncHumanWire, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    chat = once(*PAY)
    result = await humans(async_humanwire_client, window=1).arun(
        agent(chat, gated_tools(log)), "pay"
    )
    assert ran(log) == []
    assert "no approval decision arrived in time (timeout" in result.text


async def test_every_request_of_a_turn_is_answered(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # Two calls in one turn, then a second turn repeating the first's action: each
    # request is answered, and the repeated action is asked afresh (a new request id).
    log = tmp_path / "ran.log"
    human.decide_approval("approve")
    human.decide_approval("reject", "not eve")
    human.decide_approval("approve")
    chat = scripted([PAY, ("send_payment", {"amount": 7, "to": "eve"})], [PAY])
    result = await humans(async_humanwire_client).arun(agent(chat, gated_tools(log)), "pay")
    # The first turn's two requests go out together: whichever reaches the human first is
    # approved, the other rejected; the second turn's repeated action runs after them.
    first, *rest = ran(log)
    assert first in ("50 bob", "7 eve") and rest == ["50 bob"]
    assert len(forms(human)) == 3
    assert result.text == "FINAL: sent 50 to bob"


async def test_the_same_call_in_another_run_is_asked_afresh(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    # The same call id (call_0_0) and action in two runs: the Idempotency-Key is bound to
    # the request too, so the second run gets an approval of its own, not the first's.
    log = tmp_path / "ran.log"
    human.decide_approval("approve")
    human.decide_approval("approve")
    runs = humans(async_humanwire_client)
    for _ in range(2):
        result = await runs.arun(agent(once(*PAY), gated_tools(log)), "pay")
        assert result.text == "FINAL: sent 50 to bob"
    assert ran(log) == ["50 bob", "50 bob"]
    assert len(forms(human)) == 2


async def test_a_bad_key_refuses_the_call_with_the_reason(
    humanwire_service: RunningService, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    client = AsyncHumanWire(api_key="hw_not_a_key", base_url=humanwire_service.base_url)
    try:
        chat = once(*PAY)
        await humans(client).arun(agent(chat, gated_tools(log)), "pay")
    finally:
        await client.aclose()
    assert ran(log) == []  # fail closed
    said, rejected = sorted(chat.results, key=lambda text: text == REJECTED)
    assert rejected == REJECTED
    assert said.startswith("send_payment was not run: its approval could not be requested")


async def test_a_stopped_service_fails_closed(tmp_path: Path) -> None:
    service = start_test_service(tmp_path / "stopped.db")
    key = service.create_account()
    service.stop()
    log = tmp_path / "ran.log"
    client = AsyncHumanWire(api_key=key, base_url=service.base_url)
    try:
        chat = once(*PAY)
        result = await humans(client).arun(agent(chat, gated_tools(log)), "pay")
    finally:
        await client.aclose()
    assert ran(log) == []
    said, rejected = sorted(chat.results, key=lambda text: text == REJECTED)
    assert rejected == REJECTED
    assert said.startswith("send_payment was not run: its approval could not be requested")
    assert result.user_input_requests == []
