"""People as recipients in the tool kinds (``humanwire._tool_kinds``), without a framework
or a service: ``person=`` in place of ``to`` on every message kind and the form (exactly
one of the two, checked when built), the request each sends, the schema the model reads
(unchanged unless ``expose_recipient``), and the person kinds over
``POST /messages/person`` (``fallback_after``, ``HUMANWIRE_PERSON``, their texts)."""

from __future__ import annotations

from typing import Any

import pytest

from humanwire._tool_kinds import (
    TOOL_TABLE,
    AskHumanPerson,
    HumanForm,
    MessageTool,
    NotifyHumanPerson,
    PersonTool,
    bare,
    takes,
)
from humanwire._tool_schemas import MessageInput, NoteInput
from humanwire._tooling import plain_json_schema
from humanwire.types import MessageResponse

ADA = "per_ada"
ADDRESS = {
    "sms": "+14155550123",
    "whatsapp": "+14155550123",
    "slack": "U0TEAM0001",
    "email": "ada@example.com",
    "telegram": "123456789",
    "teams": "29:1a2b3c",
    "discord": "80351110224678912",
}
MESSAGE_KINDS = [row.kind for row in TOOL_TABLE if issubclass(row.kind, MessageTool)]


class Recorder:
    """Stands in for a client's ``messages`` / ``forms``: records the call an operation
    makes (the kinds' request, nothing sent)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> MessageResponse:
            self.calls.append((method, args, kwargs))
            return MessageResponse(interaction_id="int_1", status="pending")

        return record


class Client:
    def __init__(self) -> None:
        self.messages = Recorder()
        self.forms = Recorder()


def sent(tool: Any, arguments: dict[str, Any]) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    client = Client()
    tool.operation_for(arguments).send(client)
    [call] = client.messages.calls + client.forms.calls
    return call


@pytest.mark.parametrize("kind", MESSAGE_KINDS, ids=lambda k: k.__name__)
def test_every_message_kind_sends_to_a_person_in_place_of_to(kind: type[MessageTool]) -> None:
    tool = bare(kind)(person=ADA)
    assert (tool.to, tool.person) == (None, ADA)
    assert tool.args_model in (MessageInput, NoteInput)  # the model reads what it read
    method, _, kwargs = sent(tool, {"message": "Ship it?"})
    assert method == kind.channel
    assert kwargs["person"] == ADA and "to" not in kwargs


@pytest.mark.parametrize("kind", MESSAGE_KINDS, ids=lambda k: k.__name__)
def test_to_and_person_together_are_refused(kind: type[MessageTool]) -> None:
    with pytest.raises(ValueError, match="give to or person, not both"):
        bare(kind)(to=ADDRESS[kind.channel], person=ADA)


@pytest.mark.parametrize("person", ["ada", "per_", "per_a b", 7, ""])
def test_a_person_that_is_not_an_id_is_refused(person: Any) -> None:
    with pytest.raises(ValueError, match="person's id from the people directory"):
        bare(MessageTool.__subclasses__()[0])(person=person)
    with pytest.raises(ValueError, match="person's id"):
        bare(AskHumanPerson)(person=person)


def test_the_models_address_wins_only_when_exposed() -> None:
    from humanwire._tool_kinds import AskHumanSMS

    fixed = bare(AskHumanSMS)(person=ADA)
    assert "to" not in sent(fixed, {"message": "Hi", "to": "+14155550000"})[2]
    exposed = bare(AskHumanSMS)(person=ADA, expose_recipient=True)
    assert "to" in plain_json_schema(exposed.args_model)["properties"]
    assert sent(exposed, {"message": "Hi", "to": "+14155550000"})[2]["to"] == "+14155550000"
    assert sent(exposed, {"message": "Hi"})[2]["person"] == ADA


def test_a_form_goes_to_a_person_on_its_channel() -> None:
    form = bare(HumanForm)(
        channel="slack", person=ADA, title="T", fields=[{"id": "a", "label": "A", "type": "text"}]
    )
    method, _, kwargs = sent(form, {})
    assert (method, kwargs["person"]) == ("slack", ADA)
    assert "to" not in kwargs
    with pytest.raises(ValueError, match="not both"):
        bare(HumanForm)(channel="slack", to=ADDRESS["slack"], person=ADA)


def test_the_person_kinds_send_to_messages_person() -> None:
    ask = bare(AskHumanPerson)(person=ADA, wait_time=60, follow_up_time=600, fallback_after=30)
    assert ask.name == "ask_human_person"
    assert ask.args_model is MessageInput
    method, args, kwargs = sent(ask, {"message": "Ship it?"})
    assert (method, args) == ("person", (ADA,))
    assert kwargs == {
        "message": "Ship it?",
        "wait_time": 60,
        "follow_up_time": 600,
        "fallback_after": 30,
    }
    notify = bare(NotifyHumanPerson)(person=ADA)
    assert notify.name == "notify_human_person" and notify.wait_time is None
    assert notify.args_model is NoteInput
    assert sent(notify, {"message": "Done."})[2] == {"message": "Done."}
    response = MessageResponse(interaction_id="int_9", status="ended")
    assert notify.operation_for({"message": "x"}).finish(response) == (
        "Message sent to the person (interaction int_9); no reply is awaited."
    )


def test_the_model_names_a_person_only_when_exposed() -> None:
    fixed = bare(AskHumanPerson)(person=ADA)
    assert sent(fixed, {"message": "Hi", "person": "per_grace"})[1] == (ADA,)
    exposed = bare(NotifyHumanPerson)(person=ADA, expose_recipient=True)
    schema = plain_json_schema(exposed.args_model)
    assert set(schema["properties"]) == {"message", "person"} and schema["required"] == ["message"]
    assert sent(exposed, {"message": "Hi", "person": "per_grace"})[1] == ("per_grace",)
    assert sent(exposed, {"message": "Hi", "person": ""})[1] == (ADA,)  # "": left out


def test_the_person_tools_options_are_checked_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUMANWIRE_PERSON", raising=False)
    with pytest.raises(ValueError, match="HUMANWIRE_PERSON"):
        bare(AskHumanPerson)()
    with pytest.raises(ValueError, match="not to"):
        bare(AskHumanPerson)(person=ADA, to="+14155550123")
    for bad in (0, 60601, "30", True):
        with pytest.raises(ValueError, match="fallback_after"):
            bare(AskHumanPerson)(person=ADA, fallback_after=bad)
    with pytest.raises(ValueError, match="wait_time"):
        bare(AskHumanPerson)(person=ADA, wait_time=900)
    monkeypatch.setenv("HUMANWIRE_PERSON", "per_env")
    assert bare(NotifyHumanPerson)().person == "per_env"


def test_the_descriptions_say_where_and_when_it_moves() -> None:
    ask = bare(AskHumanPerson)(person=ADA, wait_time=120)
    assert ask.description.startswith("Ask a specific person a question wherever")
    assert "Waits up to 120 seconds" in ask.description and "next address" not in ask.description
    moving = bare(AskHumanPerson)(person=ADA, fallback_after=90)
    assert "not answered after 90 seconds, it is sent again on their next address" in (
        moving.description
    )
    notify = bare(NotifyHumanPerson)(person=ADA)
    assert "Does not wait for a reply" in notify.description


def test_the_table_has_the_person_rows() -> None:
    rows = {row.name: row for row in TOOL_TABLE}
    assert rows["ask_human_person"].kind is AskHumanPerson and rows["ask_human_person"].waits
    assert rows["notify_human_person"].kind is NotifyHumanPerson
    assert not rows["notify_human_person"].waits
    assert issubclass(AskHumanPerson, PersonTool)
    # An adapter that builds kinds itself (MCP, LlamaIndex) resolves no "to" for them.
    assert not takes(AskHumanPerson, "to") and takes(AskHumanPerson, "expose_recipient")
