"""Workflows of the form, call and approval tests: a module of their own, as Temporal's
sandbox re-imports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from humanwire import temporal as humanwire_temporal
    from humanwire.temporal import ApprovalResult, HumanWireActivities

HUMAN = "+12025550100"
SECOND_HUMAN = "+12025550101"
DEPLOY = {"name": "deploy", "arguments": {"version": "v2"}}


@workflow.defn
class FormWorkflow:
    @workflow.run
    async def run(self, hours: float) -> dict[str, str] | None:
        return await humanwire_temporal.ask_form(
            to=HUMAN,
            title="Release notes",
            fields=[{"id": "notes", "label": "What changed?", "type": "text"}],
            timeout=timedelta(hours=hours),
        )


@workflow.defn
class CallWorkflow:
    @workflow.run
    async def run(self, hours: float) -> str:
        return await humanwire_temporal.call(
            to=HUMAN, prompt="Ask whether v2 may ship tonight.", timeout=timedelta(hours=hours)
        )


@workflow.defn
class GatedDeploy:
    """Two people must approve; the deploy activity claims the approval first thing."""

    @workflow.run
    async def run(self, hours: float) -> str:
        approval = await humanwire_temporal.request_approval(
            title="Deploy v2",
            approvers=[{"channel": "sms", "to": HUMAN}, {"channel": "sms", "to": SECOND_HUMAN}],
            quorum=2,
            action=DEPLOY,
            timeout=timedelta(hours=hours),
        )
        if not approval.approved:
            return f"not deployed: {approval.decision}"
        return await workflow.execute_activity(
            "deploy",
            approval,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100)),
            result_type=str,
        )


@dataclass
class TwoApprovals:
    first_hours: float
    second_seconds: float


@dataclass
class Decided:
    results: list[ApprovalResult] = field(default_factory=list)


@workflow.defn
class TwoApprovalsThenLinger:
    """Asks twice, then stays running until ``finish``, so decisions sent afterwards
    reach the validator (a completed run refuses every Update before it)."""

    def __init__(self) -> None:
        self.decided = Decided()
        self.finished = False

    @workflow.run
    async def run(self, plan: TwoApprovals) -> Decided:
        for timeout in (timedelta(hours=plan.first_hours), timedelta(seconds=plan.second_seconds)):
            result = await humanwire_temporal.request_approval(
                title="Deploy v2", approvers=[{"channel": "sms", "to": HUMAN}], timeout=timeout
            )
            self.decided.results.append(result)
        await workflow.wait_condition(lambda: self.finished)
        return self.decided

    @workflow.query
    def results(self) -> Decided:
        return self.decided

    @workflow.signal
    def finish(self) -> None:
        self.finished = True


class DeployActivities:
    """The gated action: it claims the approval, then fails its first attempt (after the
    claim), as a deploy that breaks half-way would."""

    def __init__(self, humanwire: HumanWireActivities) -> None:
        self.humanwire = humanwire
        self.attempts: list[int] = []

    @activity.defn(name="deploy")
    async def deploy(self, approval: ApprovalResult) -> str:
        await self.humanwire.claim(approval)
        attempt = activity.info().attempt
        self.attempts.append(attempt)
        if attempt == 1:
            raise RuntimeError("the deploy broke after the claim")
        return f"deployed on attempt {attempt}"


@workflow.defn
class QuickSendAsk:
    """The guide's ask with a 5 s bound on the send, so a send lost with its worker is
    retried soon."""

    @workflow.run
    async def run(self, hours: float) -> str:
        answer = await humanwire_temporal.ask(
            to=HUMAN,
            message="Ship v2 tonight? Reply yes or no.",
            timeout=timedelta(hours=hours),
            send_timeout=timedelta(seconds=5),
        )
        return f"The human said: {answer}"


@workflow.defn
class OneApproval:
    @workflow.run
    async def run(self, hours: float) -> ApprovalResult:
        return await humanwire_temporal.request_approval(
            title="Deploy v2",
            approvers=[{"channel": "sms", "to": HUMAN}],
            action=DEPLOY,
            timeout=timedelta(hours=hours),
        )
