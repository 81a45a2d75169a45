"""An OpenAI Agents run inside a Temporal workflow (temporalio-openai-agents): the agent's
tools ask a human and gate a deploy on an approval through humanwire.temporal. A module
of its own, as Temporal's sandbox re-imports it."""

from __future__ import annotations

from datetime import timedelta

from agents import Agent, Runner, function_tool
from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from humanwire import temporal as humanwire_temporal
    from humanwire.temporal import ApprovalResult, HumanWireActivities

HUMAN = "+12025550100"
DEPLOY = {"name": "deploy", "arguments": {"version": "v2"}}


@function_tool
async def ask_human(question: str) -> str:
    """Ask the on-call human a question by SMS and wait for the reply."""
    return await humanwire_temporal.ask(to=HUMAN, message=question, timeout=timedelta(hours=72))


@function_tool
async def deploy(version: str) -> str:
    """Deploy a version, once a human approved it."""
    approval = await humanwire_temporal.request_approval(
        title=f"Deploy {version}",
        approvers=[{"channel": "sms", "to": HUMAN}],
        action={"name": "deploy", "arguments": {"version": version}},
        timeout=timedelta(hours=72),
    )
    if not approval.approved:
        return f"Not deployed: {approval.decision or 'no decision in time'}."
    return await workflow.execute_activity(
        "deploy_version", approval, start_to_close_timeout=timedelta(seconds=60), result_type=str
    )


@workflow.defn
class ReleaseAgent:
    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(
            name="release", instructions="Ask before deploying.", tools=[ask_human, deploy]
        )
        result = await Runner.run(agent, prompt)
        return str(result.final_output)


class DeployActivities:
    """The gated action: it uses the approval once, first thing."""

    def __init__(self, humanwire: HumanWireActivities) -> None:
        self.humanwire = humanwire

    @activity.defn(name="deploy_version")
    async def deploy_version(self, approval: ApprovalResult) -> str:
        await self.humanwire.claim(approval)
        return f"Deployed ({approval.interaction_id})."
