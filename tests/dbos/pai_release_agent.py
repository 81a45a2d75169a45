"""A Pydantic AI agent made durable by DBOS (``DBOSDurability``, Pydantic AI's DBOS
capability; and the same agent under ``DBOSAgent``, the wrapper it deprecates) whose tools
ask a human and gate a deploy on an approval through humanwire.dbos. Its model is a
``FunctionModel`` scripted as an agent would act: ask whether to ship, deploy on a yes,
then say what happened. Registered with DBOS when
imported (before any launch); ``pai_release_app.py`` runs it as a process of its own."""

from __future__ import annotations

import warnings
from datetime import timedelta

from dbos import DBOS
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSAgent, DBOSDurability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import humanwire.dbos as humanwire_dbos

HUMAN = "+12025550100"
QUESTION = "Ship v2 tonight? Reply yes or no."
MODEL_CALLS: list[int] = []
"""One entry per request this process's model answered (a recovered run's recorded
requests are read from DBOS, not asked again)."""


async def ask_human(question: str) -> str:
    """Ask the on-call human a question by SMS and wait for the reply."""
    return await humanwire_dbos.ask_async(to=HUMAN, message=question, timeout=timedelta(hours=72))


async def deploy(version: str) -> str:
    """Deploy a version, once a human approved it."""
    approval = await humanwire_dbos.approval_async(
        title=f"Deploy {version}",
        approvers=[{"channel": "sms", "to": HUMAN}],
        action={"name": "deploy", "arguments": {"version": version}},
        timeout=timedelta(hours=72),
    )
    if not approval.approved:
        return f"Not deployed: {approval.decision or 'no decision in time'}."
    await humanwire_dbos.consume_async(approval)  # a step: a recovered run claims once
    return await deploy_version(version, approval.interaction_id)


@DBOS.step(name="release.deploy_version")
async def deploy_version(version: str, approval_id: str) -> str:
    """The gated action, a step of its own: recorded, so a recovered run does not redo it."""
    return f"Deployed {version} (approval {approval_id})."


def release_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Asks first; on a yes, deploys; then reports what the tools returned."""
    MODEL_CALLS.append(len(messages))
    returns = {
        part.tool_name: str(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    if "ask_human" not in returns:
        return ModelResponse(parts=[ToolCallPart("ask_human", {"question": QUESTION})])
    answer = returns["ask_human"]
    if answer.lower().startswith("yes") and "deploy" not in returns:
        return ModelResponse(parts=[ToolCallPart("deploy", {"version": "v2"})])
    outcome = returns.get("deploy", "Not deployed.")
    return ModelResponse(parts=[TextPart(f"The human said: {answer}. {outcome}")])


release_agent = Agent(
    FunctionModel(release_model),
    name="release",
    instructions="Ask the on-call human before deploying.",
    tools=[ask_human, deploy],
    capabilities=[DBOSDurability()],
)


@DBOS.workflow(name="release.run")
async def run_release(prompt: str) -> str:
    """The durable run: the agent's model requests are DBOS steps; its tools run in the
    workflow, so their humanwire sends are steps and their waits ``DBOS.recv_async``."""
    result = await release_agent.run(prompt)
    return result.output


with warnings.catch_warnings():
    # Deprecated in Pydantic AI 2.68 for DBOSDurability; still shipped, and still used.
    warnings.filterwarnings("ignore", "`DBOSAgent` is deprecated")
    wrapped_release_agent = DBOSAgent(
        Agent(
            FunctionModel(release_model),
            name="release_wrapped",
            instructions="Ask the on-call human before deploying.",
            tools=[ask_human, deploy],
        )
    )
"""The wrapper: its ``run`` / ``run_sync`` is a DBOS workflow of its own."""
