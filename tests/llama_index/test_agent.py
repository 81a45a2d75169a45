"""A ``FunctionAgent`` driven by a scripted ``MockFunctionCallingLLM``: it asks a human
through the tool spec and finishes; and it runs a guarded action only once approved."""

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM

from approval_support import approval_link
from humanwire import AsyncHumanWire
from humanwire.approval import Approver
from humanwire.llama_index import ApprovalRequiredEvent, HumanWireToolSpec, approval_tool
from humanwire.testing import ScriptedHuman

# Upstream noise: building a FunctionAgent walks its pydantic attributes with inspect.
pytestmark = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecatedSince20",
    "ignore::pydantic.warnings.PydanticDeprecatedSince211",
)


def scripted_llm(tool_name: str, tool_kwargs: dict[str, Any]) -> MockFunctionCallingLLM:
    """Calls ``tool_name`` once, then answers with the tool's output."""

    def respond(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        results = [m for m in messages if m.role == MessageRole.TOOL]
        if not results:
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                blocks=[
                    ToolCallBlock(
                        tool_call_id="call-1", tool_name=tool_name, tool_kwargs=tool_kwargs
                    )
                ],
            )
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Done. {results[-1].content}")

    return MockFunctionCallingLLM(response_generator=respond)


async def _run(agent: FunctionAgent, prompt: str) -> tuple[str, list[Any]]:
    handler = agent.run(prompt)
    events = [event async for event in handler.stream_events()]
    result = await handler
    return str(result), events


async def test_agent_asks_a_human_and_finishes(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    tools = HumanWireToolSpec(async_client=async_humanwire_client, wait_time=10).to_tool_list()
    llm = scripted_llm("ask_human_sms", {"message": "Which city is the offsite in?"})
    agent = FunctionAgent(tools=tools, llm=llm)
    reply = human.reply("Lisbon")

    answer, events = await _run(agent, "Find out where the offsite is.")

    assert answer == "Done. Human response: Lisbon"
    assert reply.wait(5).text == "Which city is the offsite in?"
    [call] = [e for e in events if isinstance(e, ToolCallResult)]
    assert call.tool_name == "ask_human_sms" and not call.tool_output.is_error


async def test_agent_continues_when_nobody_answers(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    tools = HumanWireToolSpec(async_client=async_humanwire_client, wait_time=1).to_tool_list()
    agent = FunctionAgent(tools=tools, llm=scripted_llm("ask_human_slack", {"message": "Ping?"}))
    human.stay_silent(channel="slack")
    answer, events = await _run(agent, "Ask on slack.")
    assert answer == "Done. Human did not respond. Continue where you left off."
    [call] = [e for e in events if isinstance(e, ToolCallResult)]
    assert not call.tool_output.is_error


async def test_agent_sees_a_service_error_as_an_error_output(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    tools = HumanWireToolSpec(
        async_client=async_humanwire_client, expose_recipients=True
    ).to_tool_list()
    llm = scripted_llm("ask_human_sms", {"message": "Hi", "to": "+15555550100"})
    answer, events = await _run(FunctionAgent(tools=tools, llm=llm), "Text them.")
    [call] = [e for e in events if isinstance(e, ToolCallResult)]
    assert call.tool_output.is_error
    assert "invalid to number" in answer
    assert human.deliveries() == []


def _guarded(calls: list[dict[str, Any]]) -> Callable[..., str]:
    def refund_order(order_id: str, amount: float) -> str:
        """Refund a customer's order."""
        calls.append({"order_id": order_id, "amount": amount})
        return f"Refunded {amount:.2f} on {order_id}."

    return refund_order


async def test_approval_tool_runs_the_action_once_approved(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    calls: list[dict[str, Any]] = []
    approver = Approver(async_humanwire_client, follow_up_time=30)
    tool = approval_tool(_guarded(calls), approver=approver)
    llm = scripted_llm("refund_order", {"order_id": "A-17", "amount": 25.0})
    form = human.decide_approval("approve")

    answer, events = await _run(FunctionAgent(tools=[tool], llm=llm), "Refund A-17.")

    assert answer == "Done. Refunded 25.00 on A-17."
    assert calls == [{"order_id": "A-17", "amount": 25.0}]
    delivery = form.wait(5)
    [paused] = [e for e in events if isinstance(e, ApprovalRequiredEvent)]
    assert approval_link(delivery.text)  # the text links to the approval page
    assert paused.arguments == {"order_id": "A-17", "amount": 25.0}
    # The tool replays after the decision: the form still went out exactly once.
    assert len(human.deliveries()) == 1


async def test_approval_tool_does_not_run_a_rejected_action(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    calls: list[dict[str, Any]] = []
    approver = Approver(async_humanwire_client, follow_up_time=30)
    tool = approval_tool(_guarded(calls), approver=approver)
    llm = scripted_llm("refund_order", {"order_id": "B-2", "amount": 900.0})
    human.decide_approval("reject", "Too large, escalate to finance")

    answer, _ = await _run(FunctionAgent(tools=[tool], llm=llm), "Refund B-2.")

    assert calls == []
    assert answer == (
        "Done. refund_order was not run. Rejected by a human: Too large, escalate to finance."
    )


async def test_approval_tool_tells_the_model_its_approval_could_not_be_requested(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    """A bad key (the service refuses the request): nothing runs, no one is asked, and the
    model reads that its approval could not be requested, as every adapter's gate says."""
    wrong = AsyncHumanWire(base_url=async_humanwire_client.base_url, api_key="hw_wrong_key")
    calls: list[dict[str, Any]] = []
    tool = approval_tool(_guarded(calls), approver=Approver(wrong, to="+12025550100"))
    llm = scripted_llm("refund_order", {"order_id": "C-3", "amount": 10.0})

    answer, _ = await _run(FunctionAgent(tools=[tool], llm=llm), "Refund C-3.")

    assert calls == []
    assert human.deliveries() == []
    assert answer == (
        "Done. refund_order was not run: its approval could not be requested "
        "(humanwire: 401 unauthorized: invalid API key)."
    )
    await wrong.aclose()


def test_an_edit_is_no_longer_offered(async_humanwire_client: AsyncHumanWire) -> None:
    # An approval request is about the call as asked (its digest binds the decision).
    with pytest.raises(ValueError, match="allow_edit"):
        Approver(async_humanwire_client, follow_up_time=30, allow_edit=True)


async def test_agent_asks_by_email(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    # The embedded service's inbox has a default human by email too.
    tools = HumanWireToolSpec(async_client=async_humanwire_client, wait_time=10).to_tool_list()
    llm = scripted_llm("ask_human_email", {"message": "Which city is the offsite in?"})
    reply = human.reply("Porto", channel="email")

    answer, _ = await _run(FunctionAgent(tools=tools, llm=llm), "Find out where.")

    assert answer == "Done. Human response: Porto"
    delivery = reply.wait(5)
    assert (delivery.channel, delivery.to) == ("email", "human@example.com")


async def test_agent_notifies_by_email(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    tools = HumanWireToolSpec(async_client=async_humanwire_client).to_tool_list()
    llm = scripted_llm("notify_human", {"message": "The offsite is in Porto.", "channel": "email"})

    answer, events = await _run(FunctionAgent(tools=tools, llm=llm), "Tell them by email.")

    [delivery] = human.deliveries(channel="email")
    assert (delivery.to, delivery.text) == ("human@example.com", "The offsite is in Porto.")
    [call] = [e for e in events if isinstance(e, ToolCallResult)]
    assert call.tool_name == "notify_human" and not call.tool_output.is_error
    assert answer.startswith(
        f"Done. Message sent by email (interaction {delivery.interaction_id}); no reply is awaited."
    )
