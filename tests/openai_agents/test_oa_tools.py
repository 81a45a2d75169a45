"""The humanwire tools in an OpenAI Agents SDK run, against the real service over loopback
with the scripted human: each kind of tool, a timeout (the no-response text, a normal
result) and a service error (the SDK's failure_error_function, or the run's error)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunContextWrapper, Runner
from agents.exceptions import UserError
from oa_helpers import FakeModel

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import NotFoundError
from humanwire.openai_agents import (
    AskHumanChannel,
    AskHumanEmail,
    AskHumanPerson,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CallHuman,
    CheckHumanInteraction,
    HumanForm,
    NotifyHumanPerson,
    NotifyHumanSMS,
)
from humanwire.testing import ScriptedHuman


async def run_tool(tool: FunctionTool, arguments: dict[str, Any]) -> tuple[str, FakeModel]:
    """One agent run whose model calls ``tool`` once, then reports its output."""
    model = FakeModel((tool.name, arguments))
    result = await Runner.run(Agent(name="helper", tools=[tool], model=model), "go")
    return str(result.final_output), model


async def test_ask_by_sms_returns_the_reply(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    replied = human.reply("yes, ship it")
    tool = AskHumanSMS(client=async_humanwire_client, wait_time=10)

    output, model = await run_tool(tool, {"message": "Ship v2?"})

    assert output == "FINAL: Human response: yes, ship it"
    assert (await replied.async_wait(5)).text == "Ship v2?"
    assert model.tools == [tool]  # the model was offered the FunctionTool itself


@pytest.mark.parametrize(
    ("tool_class", "channel"),
    [(AskHumanWhatsApp, "whatsapp"), (AskHumanSlack, "slack"), (AskHumanEmail, "email")],
)
async def test_ask_on_whatsapp_and_slack(
    async_humanwire_client: AsyncHumanWire,
    human: ScriptedHuman,
    tool_class: type[FunctionTool],
    channel: str,
) -> None:
    replied = human.reply("Tuesday works", channel=channel)
    tool = tool_class(client=async_humanwire_client, wait_time=10)  # type: ignore[call-arg]

    output, _ = await run_tool(tool, {"message": "Which day?"})

    assert output == "FINAL: Human response: Tuesday works"
    assert (await replied.async_wait(5)).channel == channel


async def test_a_person_is_asked_wherever_they_are(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    replied = human.reply("yes, ship it")  # Ada's first confirmed address: the sms number
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=10)

    output, _ = await run_tool(tool, {"message": "Ship v2?"})

    assert output == "FINAL: Human response: yes, ship it"
    assert (await replied.async_wait(5)).text == "Ship v2?"


async def test_a_person_who_does_not_answer_is_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, ada: str
) -> None:
    tool = AskHumanPerson(client=async_humanwire_client, person=ada, wait_time=1)
    output, _ = await run_tool(tool, {"message": "Anyone?"})
    assert output == "FINAL: Human did not respond. Continue where you left off."


async def test_a_person_is_notified_and_a_channel_tool_takes_one(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, ada: str
) -> None:
    output, _ = await run_tool(
        NotifyHumanPerson(client=async_humanwire_client, person=ada), {"message": "Done."}
    )
    human.reply("on it")
    asked, _ = await run_tool(
        AskHumanSMS(client=async_humanwire_client, person=ada, wait_time=10), {"message": "Ok?"}
    )

    sent = [d for d in human.deliveries() if d.text in ("Done.", "Ok?")]
    assert [(d.text, d.to) for d in sent] == [("Done.", human.phone), ("Ok?", human.phone)]
    assert output == (
        f"FINAL: Message sent to the person (interaction {sent[0].interaction_id}); "
        "no reply is awaited."
    )
    assert asked == "FINAL: Human response: on it"


async def test_a_sync_client_is_given_its_async_twin(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("on my way")
    output, _ = await run_tool(
        AskHumanSMS(client=humanwire_client, wait_time=10), {"message": "Coming?"}
    )
    assert output == "FINAL: Human response: on my way"


def test_a_sync_client_serves_runs_on_several_event_loops(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    # Two asyncio.run calls make two event loops: each gets its own async client, made on
    # the sync client's service and account (an async client is tied to its loop).
    tool = AskHumanSMS(client=humanwire_client, wait_time=10)
    for answer in ("one", "two"):
        human.reply(answer)
        output, _ = asyncio.run(run_tool(tool, {"message": "Count?"}))
        assert output == f"FINAL: Human response: {answer}"


async def test_notify_sends_without_waiting(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    output, _ = await run_tool(
        NotifyHumanSMS(client=async_humanwire_client), {"message": "Deploy finished."}
    )

    [delivery] = human.deliveries()
    assert delivery.text == "Deploy finished."
    assert output == (
        f"FINAL: Message sent by sms (interaction {delivery.interaction_id}); no reply is awaited."
    )


async def test_a_form_the_model_designs_comes_back_filled(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    filled = human.fill_form({"size": "Large", "email": "ana@example.com"})
    tool = HumanForm(client=async_humanwire_client, wait_time=10)
    design = {
        "title": "Your order",
        "fields": [
            {"label": "Size", "type": "select", "options": ["Small", "Large"], "required": True},
            {"label": "Email", "type": "email"},
        ],
    }

    output, _ = await run_tool(tool, design)

    assert output == "FINAL: The human submitted the form:\nSize: Large\nEmail: ana@example.com"
    assert (await filled.async_wait(5)).kind == "form"


async def test_a_call_returns_its_summary(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.answer_call("They confirmed delivery on Tuesday.")
    output, _ = await run_tool(
        CallHuman(client=async_humanwire_client), {"prompt": "Confirm the delivery day."}
    )
    assert output == "FINAL: Call completed. Summary: They confirmed delivery on Tuesday."


async def test_check_finds_a_late_reply(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    replied = human.reply("found it")
    sent = await async_humanwire_client.messages.sms(
        to=human.phone, message="Where is the key?", follow_up_time=60
    )
    await replied.async_wait(5)

    output, _ = await run_tool(
        CheckHumanInteraction(client=async_humanwire_client, wait=5),
        {"interaction_id": sent.interaction_id},
    )

    assert output == (
        f"FINAL: Interaction {sent.interaction_id} (message by sms) was answered. "
        "Human response: found it"
    )


async def test_a_timeout_is_the_no_response_text_not_an_error(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    output, _ = await run_tool(
        AskHumanSMS(client=async_humanwire_client, wait_time=1), {"message": "Anyone?"}
    )
    await silent.async_wait(5)
    assert output == "FINAL: Human did not respond. Continue where you left off."


async def test_a_channel_card_answers_with_its_own_texts(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    card = await async_humanwire_client.channels.create(
        type="sms",
        to=human.phone,
        wait_time=1,
        response_template="The operator said: {{message}}",
        no_response_template="Nobody on call answered.",
    )
    tool = AskHumanChannel(card.id, client=async_humanwire_client)
    silent, _ = await run_tool(tool, {"message": "Disk full?"})
    assert silent == "FINAL: Nobody on call answered."

    human.reply("rotating logs now")
    answered, _ = await run_tool(tool, {"message": "Disk still full?"})
    assert answered == "FINAL: The operator said: rotating logs now"


async def test_a_service_error_is_reported_to_the_model(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    output, _ = await run_tool(
        CheckHumanInteraction(client=async_humanwire_client), {"interaction_id": "missing"}
    )
    assert output.startswith("FINAL: humanwire: 404 not_found: ")


async def test_failure_error_function_is_the_sdks_hook(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    seen: list[Exception] = []

    def report(context: RunContextWrapper[Any], error: Exception) -> str:
        seen.append(error)
        return "the lookup failed"

    tool = CheckHumanInteraction(client=async_humanwire_client, failure_error_function=report)
    output, _ = await run_tool(tool, {"interaction_id": "missing"})

    assert output == "FINAL: the lookup failed"
    assert [type(error) for error in seen] == [NotFoundError]


async def test_without_a_failure_function_the_run_fails(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    tool = CheckHumanInteraction(client=async_humanwire_client, failure_error_function=None)
    with pytest.raises(UserError) as raised:
        await run_tool(tool, {"interaction_id": "missing"})
    assert isinstance(raised.value.__cause__, NotFoundError)


async def test_arguments_that_do_not_fit_are_reported_and_nothing_is_sent(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    output, _ = await run_tool(AskHumanSMS(client=async_humanwire_client), {"message": ""})
    assert output.startswith("FINAL: humanwire: invalid arguments: message: ")
    # Every argument that does not fit is named, as the other adapters and MCP name them.
    output, _ = await run_tool(HumanForm(client=async_humanwire_client), {})
    assert output == (
        "FINAL: humanwire: invalid arguments: title: Field required; fields: Field required"
    )
    assert human.deliveries() == []


async def test_a_form_the_model_got_wrong_says_what_to_fix(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    design = {"title": "Pick", "fields": [{"label": "Size", "type": "select"}]}
    output, _ = await run_tool(HumanForm(client=async_humanwire_client), design)
    assert output == (
        "FINAL: humanwire: 400 invalid_request: fields[0] ('Size') is a select field: "
        "give it options (field fields[0].options)"
    )
    assert human.deliveries() == []
