"""Workflows the approval tests run (imported by a subprocess too, for the durable test).

No ``from __future__ import annotations``: workflow steps are read by their annotations.
"""

from typing import Any

from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step
from pydantic import BaseModel

from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver
from humanwire.llama_index import request_approval


def summary(decision: ApprovalDecision) -> dict[str, Any]:
    return {
        "approved": decision.approved,
        "decision": decision.decision,
        "comment": decision.comment,
        "timed_out": decision.timed_out,
        "interaction_id": decision.interaction_id,
    }


class DeployFlow(Workflow):
    """One approval before a deploy."""

    def __init__(self, approver: Approver | None, *, watch: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.approver = approver
        self.watch = watch

    @step
    async def deploy(self, ctx: Context, ev: StartEvent) -> StopEvent:
        version = ev.get("version")
        request = ApprovalRequest(
            action="deploy",
            arguments={"version": version},
            description=f"Deploy {version} to production.",
        )
        decision = await request_approval(ctx, request, approver=self.approver, watch=self.watch)
        return StopEvent(result=summary(decision))


class Deployed(Event):
    first: dict[str, Any]


class TwoApprovalFlow(Workflow):
    """A deploy, then an announcement: two approvals in two steps."""

    def __init__(self, approver: Approver | None, *, watch: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.approver = approver
        self.watch = watch

    @step
    async def deploy(self, ctx: Context, ev: StartEvent) -> Deployed:
        decision = await request_approval(
            ctx,
            ApprovalRequest("deploy", {"version": ev.get("version")}),
            approver=self.approver,
            watch=self.watch,
        )
        return Deployed(first=summary(decision))

    @step
    async def announce(self, ctx: Context, ev: Deployed) -> StopEvent:
        decision = await request_approval(
            ctx,
            ApprovalRequest("announce", {"channel": "#general"}),
            approver=self.approver,
            watch=self.watch,
        )
        return StopEvent(result={"deploy": ev.first, "announce": summary(decision)})


class PlainState(BaseModel):
    deploys: int = 0


class ApprovalState(BaseModel):
    deploys: int = 0
    humanwire_approvals: dict[str, Any] = {}


class PlainStateFlow(DeployFlow):
    """A typed state without room for the approval record."""

    @step
    async def deploy(self, ctx: Context[PlainState], ev: StartEvent) -> StopEvent:
        decision = await request_approval(
            ctx, ApprovalRequest("deploy", {}), approver=self.approver, watch=self.watch
        )
        return StopEvent(result=summary(decision))


class ApprovalStateFlow(DeployFlow):
    """A typed state with the field the approval record lives in."""

    @step
    async def deploy(self, ctx: Context[ApprovalState], ev: StartEvent) -> StopEvent:
        decision = await request_approval(
            ctx, ApprovalRequest("deploy", {}), approver=self.approver, watch=self.watch
        )
        async with ctx.store.edit_state() as state:
            state.deploys += 1
        return StopEvent(result=summary(decision))
