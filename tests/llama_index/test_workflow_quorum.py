"""LlamaIndex's workflow approval takes approvers, quorum and escalation, and the service
gets exactly those: a workflow whose approver has two approvers, a quorum of two and an
escalation tier runs its gated action only once both approved on their pages, and finds
the approval consumed, once (``approval_quorum_support``)."""

from typing import Any

from llama_index.core.workflow import Context, StartEvent, StopEvent, Workflow, step

from approval_quorum_support import EXPECTED, OPTIONS, aobserve, both_approve
from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import ApprovalRequest, Approver
from humanwire.llama_index import request_approval
from pg_support import humanwire_config  # noqa: F401  (on each store in turn)


class RefundFlow(Workflow):
    """An approval, then the refund it gates (which records what the service holds)."""

    def __init__(self, approver: Approver, client: AsyncHumanWire, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.approver = approver
        self.client = client
        self.seen: list[dict[str, Any]] = []

    @step
    async def refund(self, ctx: Context, ev: StartEvent) -> StopEvent:
        request = ApprovalRequest("refund", {"order": ev.get("order")})
        decision = await request_approval(ctx, request, approver=self.approver)
        if decision.approved:
            self.seen.append(await aobserve(self.client))
        return StopEvent(result=decision.decision)


async def test_two_approvers_quorum_and_escalation(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    approver = Approver(async_humanwire_client, follow_up_time=30, **OPTIONS)
    flow = RefundFlow(approver, async_humanwire_client, timeout=None)
    first, second = both_approve(humanwire_client)
    assert await flow.run(order=1042) == "approve"
    await first.async_wait(30), await second.async_wait(30)
    assert flow.seen == [EXPECTED]
