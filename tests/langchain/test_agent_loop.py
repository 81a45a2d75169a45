"""An offline agent loop (create_agent with a scripted chat model) that asks a human by
SMS, gets a form back, and finishes: the tools as an agent developer wires them."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from lc_helpers import scripted_model

from humanwire import AsyncHumanWire, HumanWire
from humanwire.langchain import AskHumanSMS, HumanForm, HumanWireToolkit
from humanwire.testing import ScriptedHuman


def _turns() -> list[AIMessage]:
    return [
        AIMessage(
            content="",
            tool_calls=[
                {
                    "name": "ask_human_sms",
                    "args": {"message": "Which city is the offsite in?"},
                    "id": "call-ask",
                }
            ],
        ),
        AIMessage(
            content="",
            tool_calls=[
                {
                    "name": "human_form",
                    "args": {
                        "title": "Offsite details",
                        "fields": [
                            {"id": "nights", "label": "Nights", "type": "text", "required": True},
                            {
                                "id": "hotel",
                                "label": "Hotel",
                                "type": "select",
                                "options": ["Budget", "Comfort"],
                            },
                        ],
                    },
                    "id": "call-form",
                }
            ],
        ),
        AIMessage(content="Booked 2 nights in Lisbon, Comfort hotel."),
    ]


def _tool_messages(result: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


def test_agent_asks_by_sms_gets_a_form_back_and_finishes(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("Lisbon")
    human.fill_form({"nights": "2", "hotel": "Comfort"})
    tools = [
        AskHumanSMS(client=humanwire_client, wait_time=5),
        HumanForm(client=humanwire_client, wait_time=5),
    ]
    agent = create_agent(scripted_model(*_turns()), tools=tools)
    result = agent.invoke({"messages": [{"role": "user", "content": "Plan the offsite"}]})

    by_call = _tool_messages(result)
    assert by_call["call-ask"].content == "Human response: Lisbon"
    assert by_call["call-form"].status == "success"
    assert "Nights: 2" in by_call["call-form"].content
    assert "Hotel: Comfort" in by_call["call-form"].content
    assert by_call["call-form"].artifact.values == {"nights": "2", "hotel": "Comfort"}
    assert result["messages"][-1].content == "Booked 2 nights in Lisbon, Comfort hotel."


async def test_agent_async_with_toolkit_and_a_silent_human(
    humanwire_client: HumanWire, async_humanwire_client: AsyncHumanWire
) -> None:
    toolkit = HumanWireToolkit(
        client=humanwire_client, async_client=async_humanwire_client, wait_time=1
    )
    agent = create_agent(scripted_model(*_turns()), tools=toolkit.get_tools())
    result = await agent.ainvoke({"messages": [{"role": "user", "content": "Plan the offsite"}]})

    by_call = _tool_messages(result)
    # Nobody answers: the agent gets the no-response text as a normal result and goes on.
    for call_id in ("call-ask", "call-form"):
        assert by_call[call_id].status == "success"
        assert str(by_call[call_id].content).startswith(
            "Human did not respond. Continue where you left off."
        )
    # The text went out without a follow-up window: nothing more will come.
    assert by_call["call-ask"].content == "Human did not respond. Continue where you left off."
    # A form stays open after the wait (90 s by default): the model is told where to look.
    form_id = by_call["call-form"].artifact.interaction_id
    assert f"They can still answer later: interaction {form_id}." in by_call["call-form"].content
    assert isinstance(result["messages"][-1], AIMessage)
