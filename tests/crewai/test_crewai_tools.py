"""The humanwire tools in a CrewAI crew, against the real service over loopback with the
scripted human: each kind of tool, a timeout (the no-response text, a normal result), a
service error (CrewAI's ToolFailure, once), arguments CrewAI refuses, and no result cache."""

from __future__ import annotations

from typing import Any

import pytest
from crewai.tools.tool_failure import ToolExecutionFailedError, ToolFailure
from crewai_helpers import NativeLLM, ScriptedLLM, kickoff, run_tool

from humanwire import AsyncHumanWire, HumanWire
from humanwire.crewai import (
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
from humanwire.testing import RunningService, ScriptedHuman


def test_ask_by_sms_returns_the_reply(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    replied = human.reply("yes, ship it")
    tool = AskHumanSMS(client=humanwire_client, wait_time=10)

    answer, output = run_tool(tool, {"message": "Ship v2?"})

    assert answer == "Human response: yes, ship it"
    assert replied.wait(5).text == "Ship v2?"
    assert output.tasks_output[0].tool_failures == []


@pytest.mark.parametrize(
    ("tool_class", "channel"),
    [(AskHumanWhatsApp, "whatsapp"), (AskHumanSlack, "slack"), (AskHumanEmail, "email")],
)
def test_ask_on_whatsapp_and_slack(
    humanwire_client: HumanWire, human: ScriptedHuman, tool_class: type[Any], channel: str
) -> None:
    replied = human.reply("Tuesday works", channel=channel)
    tool = tool_class(client=humanwire_client, wait_time=10)

    answer, _ = run_tool(tool, {"message": "Which day?"})

    assert answer == "Human response: Tuesday works"
    assert replied.wait(5).channel == channel


def test_an_async_client_is_given_its_sync_twin(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    human.reply("on my way")
    client = AsyncHumanWire(api_key=humanwire_api_key, base_url=humanwire_service.base_url)
    answer, _ = run_tool(AskHumanSMS(client=client, wait_time=10), {"message": "Coming?"})
    assert answer == "Human response: on my way"


def test_notify_sends_without_waiting(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    answer, _ = run_tool(NotifyHumanSMS(client=humanwire_client), {"message": "Deploy finished."})

    [delivery] = human.deliveries()
    assert delivery.text == "Deploy finished."
    assert answer == (
        f"Message sent by sms (interaction {delivery.interaction_id}); no reply is awaited."
    )


def test_a_form_the_model_designs_comes_back_filled(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    filled = human.fill_form({"size": "Large", "email": "ana@example.com"})
    tool = HumanForm(client=humanwire_client, wait_time=10)
    # CrewAI sends schemas strict, so a model fills every property: "" means left out.
    blank = {"id": "", "placeholder": "", "helper_text": "", "pattern": "", "pattern_hint": ""}
    design = {
        "title": "Your order",
        "description": "",
        "message": "",
        "fields": [
            {"label": "Size", "type": "select", "options": ["Small", "Large"], "required": True}
            | blank,
            {"label": "Email", "type": "email", "options": [], "required": False} | blank,
        ],
    }

    answer, _ = run_tool(tool, design)

    assert answer == "The human submitted the form:\nSize: Large\nEmail: ana@example.com"
    delivery = filled.wait(5)
    assert delivery.kind == "form"
    assert delivery.text is not None and delivery.form_url in delivery.text


def test_a_call_returns_its_summary(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    human.answer_call("They confirmed delivery on Tuesday.")
    answer, _ = run_tool(CallHuman(client=humanwire_client), {"prompt": "Confirm the day."})
    assert answer == "Call completed. Summary: They confirmed delivery on Tuesday."


def test_check_finds_a_late_reply(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    replied = human.reply("found it")
    sent = humanwire_client.messages.sms(
        to=human.phone, message="Where is the key?", follow_up_time=60
    )
    replied.wait(5)

    answer, _ = run_tool(
        CheckHumanInteraction(client=humanwire_client, wait=5),
        {"interaction_id": sent.interaction_id},
    )

    assert answer == (
        f"Interaction {sent.interaction_id} (message by sms) was answered. Human response: found it"
    )


def test_a_person_is_asked_wherever_they_are(
    humanwire_client: HumanWire, human: ScriptedHuman, ada: str
) -> None:
    replied = human.reply("yes, ship it")  # Ada's first confirmed address: the sms number
    tool = AskHumanPerson(client=humanwire_client, person=ada, wait_time=10)

    answer, output = run_tool(tool, {"message": "Ship v2?"})

    assert answer == "Human response: yes, ship it"
    assert replied.wait(5).text == "Ship v2?"
    assert output.tasks_output[0].tool_failures == []


def test_a_person_who_does_not_answer_is_the_no_response_text(
    humanwire_client: HumanWire, ada: str
) -> None:
    tool = AskHumanPerson(client=humanwire_client, person=ada, wait_time=1)
    answer, output = run_tool(tool, {"message": "?"})
    assert answer == "Human did not respond. Continue where you left off."
    assert output.tasks_output[0].tool_failures == []


def test_a_person_is_notified_and_the_saved_tool_keeps_them(
    humanwire_client: HumanWire, human: ScriptedHuman, ada: str
) -> None:
    tool = NotifyHumanPerson(client=humanwire_client, person=ada)
    assert tool.model_dump()["person"] == ada  # CrewAI's saved tool is rebuilt the same
    answer, _ = run_tool(tool, {"message": "Deploy done."})
    [sent] = [d for d in human.deliveries() if d.text == "Deploy done."]
    assert sent.to == human.phone
    assert answer == (
        f"Message sent to the person (interaction {sent.interaction_id}); no reply is awaited."
    )


def test_a_timeout_is_the_no_response_text_not_a_failure(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    answer, output = run_tool(AskHumanSMS(client=humanwire_client, wait_time=1), {"message": "?"})
    silent.wait(5)
    assert answer == "Human did not respond. Continue where you left off."
    assert output.tasks_output[0].tool_failures == []


def test_a_channel_card_answers_with_its_own_texts(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    card = humanwire_client.channels.create(
        type="sms",
        to=human.phone,
        wait_time=1,
        response_template="The operator said: {{message}}",
        no_response_template="Nobody on call answered.",
    )
    tool = AskHumanChannel(channel_id=card.id, client=humanwire_client)
    silent, _ = run_tool(tool, {"message": "Disk full?"})
    assert silent == "Nobody on call answered."

    human.reply("rotating logs now")
    answered, _ = run_tool(tool, {"message": "Disk still full?"})
    assert answered == "The operator said: rotating logs now"


class CountingCheck(CheckHumanInteraction):
    runs: int = 0

    def _run(self, **arguments: Any) -> Any:
        self.runs += 1
        return super()._run(**arguments)


def test_a_service_error_is_a_tool_failure_and_runs_once(humanwire_client: HumanWire) -> None:
    tool = CountingCheck(client=humanwire_client)

    answer, output = run_tool(tool, {"interaction_id": "missing"})

    assert answer.startswith("humanwire: 404 not_found: ")
    assert answer.endswith(" (code: not_found)")
    [record] = output.tasks_output[0].tool_failures
    assert record.tool_name == "check_human_interaction"
    assert record.failure.code == "not_found"
    assert record.failure.details == {"status_code": 404}
    # Returned, not raised: CrewAI's text loop runs a raising tool again, and again.
    assert tool.runs == 1


def test_the_raise_policy_ends_the_run(humanwire_client: HumanWire) -> None:
    tool = CheckHumanInteraction(client=humanwire_client, tool_failure_policy="raise")
    with pytest.raises(ToolExecutionFailedError) as raised:
        run_tool(tool, {"interaction_id": "missing"})
    assert raised.value.record.failure.message.startswith("humanwire: 404 not_found: ")


def test_an_unreachable_service_is_a_retryable_failure() -> None:
    client = HumanWire(api_key="hw_test", base_url="http://127.0.0.1:9", max_retries=0)
    tool = NotifyHumanSMS(client=client, to="+12025550100")
    result = tool.run(message="hello")
    assert isinstance(result, ToolFailure)
    assert result.retryable and result.message.startswith("humanwire: ")


def test_arguments_crewai_refuses_are_never_sent(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    llm = ScriptedLLM(model="fake", steps=[("ask_human_sms", {"message": ""})])
    kickoff(llm, [AskHumanSMS(client=humanwire_client, wait_time=5)])
    [observation] = llm.observations
    assert "validation error for MessageInput" in observation
    assert "String should have at least 1 character" in observation
    assert human.deliveries() == []


def test_a_form_the_model_got_wrong_says_what_to_fix(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    design = {"title": "Pick", "fields": [{"label": "Size", "type": "select"}]}
    answer, output = run_tool(HumanForm(client=humanwire_client), design)
    assert answer == (
        "humanwire: 400 invalid_request: fields[0] ('Size') is a select field: "
        "give it options (field fields[0].options) (code: invalid_request)"
    )
    assert len(output.tasks_output[0].tool_failures) == 1
    assert human.deliveries() == []


def test_the_same_question_later_asks_again(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    for reply in ("not yet", "at noon", "now it is"):
        human.reply(reply)
    tool = AskHumanSMS(client=humanwire_client, wait_time=10)
    green = ("ask_human_sms", {"message": "Is the build green?"})
    # (CrewAI refuses the very same call twice in a row: another question in between.)
    llm = ScriptedLLM(model="fake", steps=[green, ("ask_human_sms", {"message": "When?"}), green])

    # A crew that caches tool results by arguments: a person's answer is never reused.
    output = kickoff(llm, [tool], cache=True)

    assert llm.observations == [
        "Human response: not yet",
        "Human response: at noon",
        "Human response: now it is",
    ]
    assert output.raw == "Human response: now it is"
    assert len(human.deliveries()) == 3


def test_native_tool_calls_reach_the_tools_too(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    human.reply("blue")
    tool = AskHumanSMS(client=humanwire_client, wait_time=10)
    llm = NativeLLM(model="fake", steps=[("ask_human_sms", {"message": "Which color?"})])

    output = kickoff(llm, [tool])

    assert output.raw == "Human response: blue"
    [offered] = llm.offered
    assert offered["function"]["name"] == "ask_human_sms"
    assert offered["function"]["description"] == tool.description


def test_the_tools_follow_the_tool_table() -> None:
    import humanwire.crewai
    from framework_support import check_tools_follow_the_table

    check_tools_follow_the_table(humanwire.crewai)
