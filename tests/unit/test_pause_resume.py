"""The resume every adapter with paused runs shares (``humanwire._pauses.resume``), driven
through a ``PauseResumer`` of a framework of its own against the real service: which
deliveries resume a pause, the other calls' answers read from the service, and the
expiry sweep."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from framework_support import approval_decided
from humanwire import AsyncHumanWire
from humanwire._pauses import (
    RESUME_KEY,
    Answer,
    PauseResumer,
    PendingApproval,
    resume_answered,
    resume_expired,
    resume_from_webhook,
    send_pending_approval,
)
from humanwire.approval import ApprovalDecision, Approver
from humanwire.testing import ScriptedHuman

FRAMEWORK = "toy"
RUN_KEY, CALL_KEY = "toy_run_id", "toy_call_id"

Pause = dict[str, PendingApproval]
"""A toy pause: its calls, by call id."""


class Toy:
    """A framework of its own: pauses in memory, the resume step records what it got."""

    def __init__(self, client: AsyncHumanWire, **options: Any) -> None:
        self.saved: dict[str, Pause] = {}
        self.resumed: list[dict[str, Answer]] = []
        self.client = client
        self.options = options

    def resumer(self) -> PauseResumer[Pause, str]:
        async def resume(pause: Pause, answers: dict[str, Answer]) -> str:
            self.resumed.append(answers)
            return "resumed"

        async def client() -> AsyncHumanWire:
            return self.client

        return PauseResumer(
            framework=FRAMEWORK,
            pending=lambda pause: pause,
            resume=resume,
            client=client,
            load=self.saved.get,
            keys=lambda: list(self.saved),
            pause_key=RUN_KEY,
            call_key=CALL_KEY,
            **self.options,
        )

    async def pause(self, approver: Approver, run_id: str, *call_ids: str) -> Pause:
        pause = {
            call_id: await send_pending_approval(
                approver,
                call_id=call_id,
                tool_name="send_payment",
                arguments={"amount": 50, "call": call_id},
                idempotency_key=f"toy:{run_id}:{call_id}",
                metadata=metadata(run_id, call_id),
            )
            for call_id in call_ids
        }
        self.saved[run_id] = pause
        return pause


def metadata(run_id: str, call_id: str) -> dict[str, str]:
    return {RESUME_KEY: FRAMEWORK, RUN_KEY: run_id, CALL_KEY: call_id}


def decision_of(answers: Mapping[str, Answer], call_id: str) -> ApprovalDecision:
    answer = answers[call_id]
    assert isinstance(answer, ApprovalDecision)
    return answer


async def test_a_delivery_resumes_its_pause_and_nothing_else(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    toy = Toy(async_humanwire_client)
    [call] = (await toy.pause(Approver(async_humanwire_client), "r1", "c1")).values()
    resumer = toy.resumer()
    others = [
        approval_decided(call.interaction_id, {**metadata("r1", "c1"), RESUME_KEY: "langgraph"}),
        approval_decided(call.interaction_id, {}),  # no resume key: not a toy send
        approval_decided(call.interaction_id, metadata("r2", "c1")),  # no such run
        approval_decided(call.interaction_id, metadata("r1", "c2")),  # names another call
        approval_decided("another-interaction", metadata("r1", "c1")),  # an earlier pause
    ]
    for body in others:
        assert await resume_from_webhook(resumer, body) is None, body
    assert toy.resumed == []

    body = approval_decided(call.interaction_id, metadata("r1", "c1"))
    assert await resume_from_webhook(resumer, body) == "resumed"
    [answers] = toy.resumed
    assert decision_of(answers, "c1").approved


async def test_an_unmarked_send_counts_only_where_the_adapter_says(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    toy = Toy(async_humanwire_client, unmarked=True)
    [call] = (await toy.pause(Approver(async_humanwire_client), "r1", "c1")).values()
    unmarked = {RUN_KEY: "r1", CALL_KEY: "c1"}
    assert await resume_from_webhook(toy.resumer(), approval_decided(call.interaction_id, unmarked))
    marked_other = {**unmarked, RESUME_KEY: "langgraph"}
    body = approval_decided(call.interaction_id, marked_other)
    assert await resume_from_webhook(toy.resumer(), body) is None
    assert len(toy.resumed) == 1


async def test_the_last_answer_resumes_with_the_others_read_from_the_service(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    toy = Toy(async_humanwire_client)
    pause = await toy.pause(Approver(async_humanwire_client), "r1", "c1", "c2")
    resumer = toy.resumer()
    first = approval_decided(pause["c1"].interaction_id, metadata("r1", "c1"))
    assert await resume_from_webhook(resumer, first) is None  # c2 is still open
    assert await resume_answered(resumer, pause) is None
    assert await resume_expired(resumer) == []
    assert toy.resumed == []

    human.decide_approval("reject", "not that one", interaction_id=pause["c2"].interaction_id)
    human.decide_approval("approve", interaction_id=pause["c1"].interaction_id)
    for call in pause.values():
        await async_humanwire_client.approvals.wait(call.interaction_id, timeout=10)
    assert await resume_expired(resumer) == ["resumed"]
    [answers] = toy.resumed
    assert decision_of(answers, "c1").approved
    rejected = decision_of(answers, "c2")
    assert (rejected.approved, rejected.comment) == (False, "not that one")
