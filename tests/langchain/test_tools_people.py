"""People as recipients in the LangChain tools, against the real service: the person tools
(``ask_human_person`` / ``notify_human_person`` over ``POST /messages/person``) answered,
timed out and moving on to the next address, a channel tool and a form sent to a person
in place of ``to``, the model naming a person only when exposed, and what is refused when
a tool is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lc_helpers import PHONE, Mode, model_schema, properties, run_tool

import humanwire.langchain as adapter
from framework_support import EMAIL, assert_person_checked_when_built, confirmed_person
from humanwire import HumanWire
from humanwire.langchain import (
    AskHumanEmail,
    AskHumanPerson,
    AskHumanSMS,
    HumanForm,
    NotifyHumanPerson,
)
from humanwire.testing import ScriptedHuman
from humanwire.types import DEFAULT_NO_RESPONSE_TEMPLATE, MessageResponse

MODES = ["sync", "async"]


def test_to_and_person_together_or_no_person_are_refused_when_built() -> None:
    assert_person_checked_when_built(adapter)


def test_the_schema_is_the_message_alone_unless_exposed() -> None:
    assert properties(AskHumanPerson(person="per_ada")) == {"message"}
    assert properties(AskHumanSMS(person="per_ada")) == {"message"}
    exposed = AskHumanPerson(person="per_ada", expose_recipient=True)
    assert set(model_schema(exposed)["properties"]) == {"message", "person"}


def test_the_person_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANWIRE_PERSON", "per_from_env")
    assert AskHumanPerson().person == "per_from_env"
    assert AskHumanPerson(person="per_given").person == "per_given"


@pytest.mark.parametrize("mode", MODES)
async def test_a_person_is_asked_wherever_they_are(
    make: Callable[..., Any], human: ScriptedHuman, ada: str, mode: Mode
) -> None:
    replied = human.reply("Blue, please")  # Ada's first confirmed address: the sms number
    tool = make(AskHumanPerson, person=ada, wait_time=5)
    assert tool.name == "ask_human_person"
    message = await run_tool(tool, {"message": "Which colour?"}, mode)
    assert message.status == "success"
    assert message.content == "Human response: Blue, please"
    assert isinstance(message.artifact, MessageResponse)
    delivery = await replied.async_wait(5)
    assert (delivery.channel, delivery.to, delivery.text) == ("sms", PHONE, "Which colour?")


@pytest.mark.parametrize("mode", MODES)
async def test_a_person_who_does_not_answer_is_the_no_response_text(
    make: Callable[..., Any], ada: str, mode: Mode
) -> None:
    tool = make(AskHumanPerson, person=ada, wait_time=1)
    message = await run_tool(tool, {"message": "Anyone?"}, mode)
    assert message.status == "success"
    assert message.content == DEFAULT_NO_RESPONSE_TEMPLATE
    assert message.artifact.responded is False


async def test_a_person_is_notified(
    make: Callable[..., Any], humanwire_client: HumanWire, ada: str
) -> None:
    message = await run_tool(make(NotifyHumanPerson, person=ada), {"message": "Done."}, "async")
    interaction = message.artifact.interaction_id
    assert message.content == (
        f"Message sent to the person (interaction {interaction}); no reply is awaited."
    )
    (delivery,) = humanwire_client.sandbox.deliveries(interaction_id=interaction)
    assert (delivery.to, delivery.text) == (PHONE, "Done.")


async def test_the_message_moves_on_to_the_next_address(
    make: Callable[..., Any], humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    grace = confirmed_person(humanwire_client, "Grace", [("sms", PHONE), ("email", EMAIL)])
    replied = human.reply("Seen it by email", channel="email")
    tool = make(AskHumanPerson, person=grace, wait_time=30, fallback_after=1)
    assert "after 1 seconds" in tool.description
    message = await run_tool(tool, {"message": "Approve the spend?"}, "async")
    assert message.content == "Human response: Seen it by email"
    assert (await replied.async_wait(5)).to == EMAIL
    first = humanwire_client.sandbox.deliveries(interaction_id=message.artifact.interaction_id)
    assert [d.to for d in first] == [PHONE]  # asked there first; the email was the onward one


async def test_a_channel_tool_and_a_form_take_a_person_in_place_of_to(
    make: Callable[..., Any], humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    grace = confirmed_person(humanwire_client, "Grace", [("email", EMAIL)])
    human.reply("Tuesday", channel="email")
    asked = await run_tool(
        make(AskHumanEmail, person=grace, wait_time=5), {"message": "Which day?"}, "async"
    )
    assert asked.content == "Human response: Tuesday"
    human.fill_form({"day": "Wednesday"}, channel="email")
    form = make(
        HumanForm,
        channel="email",
        person=grace,
        title="Offsite",
        fields=[{"id": "day", "label": "Day", "type": "text"}],
        wait_time=5,
    )
    filled = await run_tool(form, {}, "async")
    assert filled.content == "The human submitted the form:\nDay: Wednesday"
    for message in (asked, filled):
        (delivery,) = humanwire_client.sandbox.deliveries(
            interaction_id=message.artifact.interaction_id
        )
        assert (delivery.channel, delivery.to) == ("email", EMAIL)


async def test_a_person_who_confirmed_nothing_there_is_the_services_reason(
    make: Callable[..., Any], humanwire_client: HumanWire, ada: str
) -> None:
    # Ada has no email address: the service's 400 names person, as the model reads it.
    message = await run_tool(make(AskHumanEmail, person=ada, wait_time=1), {"message": "?"}, "sync")
    assert message.status == "error"
    assert message.content.startswith("humanwire: 400 invalid_request: ")


async def test_the_model_names_a_person_only_when_exposed(
    make: Callable[..., Any], humanwire_client: HumanWire, ada: str
) -> None:
    grace = confirmed_person(humanwire_client, "Grace", [("email", EMAIL)])
    fixed = await run_tool(
        make(NotifyHumanPerson, person=ada), {"message": "Hi", "person": grace}, "async"
    )
    exposed = await run_tool(
        make(NotifyHumanPerson, person=ada, expose_recipient=True),
        {"message": "Hi", "person": grace},
        "async",
    )
    where = [
        humanwire_client.sandbox.deliveries(interaction_id=m.artifact.interaction_id)[0].to
        for m in (fixed, exposed)
    ]
    assert where == [PHONE, EMAIL]


async def test_the_toolkit_adds_the_person_tools(
    humanwire_client: HumanWire, human: ScriptedHuman, ada: str
) -> None:
    from humanwire.langchain import HumanWireToolkit

    assert "ask_human_person" not in {t.name for t in HumanWireToolkit().get_tools()}
    tools = HumanWireToolkit(
        client=humanwire_client, person=ada, notify=True, wait_time=5, fallback_after=60
    ).get_tools()
    names = [tool.name for tool in tools]
    assert names[:3] == ["ask_human_sms", "ask_human_person", "notify_human_person"]
    human.reply("yes")
    message = await run_tool(tools[1], {"message": "Ready?"}, "sync")
    assert message.content == "Human response: yes"
