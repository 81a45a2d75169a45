"""What a model reads: tool names, descriptions, argument schemas; and recipient rules."""

from typing import Any

import pytest

from humanwire import HumanWire
from humanwire.llama_index import HumanWireToolSpec

ALL = {
    "ask_human_sms",
    "ask_human_whatsapp",
    "ask_human_slack",
    "notify_human",
    "ask_human_form",
    "call_human",
    "check_human_interaction",
}


def _schemas(spec: HumanWireToolSpec) -> dict[str, dict[str, Any]]:
    tools = spec.to_tool_list()
    return {
        tool.metadata.get_name(): tool.metadata.get_parameters_dict()
        for tool in tools
        if tool.metadata.fn_schema is not None
    }


REMOTE = HumanWire(api_key="k", base_url="https://humanwire.example")
"""A remote base URL: nothing is sent in these tests, and no embedded service starts."""


def _spec(**kwargs: Any) -> HumanWireToolSpec:
    # Recipients given: a remote service has no default human.
    options = {"to": "+14155550123", "slack_to": "U0TEAM0001", **kwargs}
    return HumanWireToolSpec(REMOTE, **options)


def _walk(node: object) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


def test_every_tool_has_sync_and_async_and_a_described_schema() -> None:
    spec = _spec()
    tools = spec.to_tool_list()
    assert {t.metadata.get_name() for t in tools} == ALL
    for tool in tools:
        assert tool.fn is not None and tool.async_fn is not None
        params = tool.metadata.get_parameters_dict()
        for name, prop in params["properties"].items():
            assert prop.get("description"), f"{tool.metadata.name}.{name} has no description"
        assert len(tool.metadata.description) > 40
    assert [pair[0] for pair in spec.spec_functions] == [
        "ask_human_sms",
        "ask_human_whatsapp",
        "ask_human_slack",
        "notify_human",
        "ask_human_form",
        "call_human",
        "check_human_interaction",
    ]


def test_recipient_is_hidden_unless_exposed() -> None:
    hidden = _schemas(_spec())
    assert all("to" not in schema["properties"] for schema in hidden.values())
    assert hidden["ask_human_sms"]["required"] == ["message"]

    exposed = _schemas(_spec(expose_recipients=True))
    for name in ("ask_human_sms", "ask_human_whatsapp", "ask_human_slack", "call_human"):
        assert "to" in exposed[name]["properties"], name
        assert "to" not in exposed[name].get("required", [])
    assert "E.164" in exposed["ask_human_sms"]["properties"]["to"]["description"]
    assert "Slack member ID" in exposed["ask_human_slack"]["properties"]["to"]["description"]


def test_channel_tool_only_with_a_channel_id() -> None:
    assert "ask_human_channel" not in _schemas(_spec())
    with_card = _schemas(_spec(channel_id="ch_abcdefghijklmnopqrstuvwx"))
    assert with_card["ask_human_channel"]["required"] == ["message"]


def test_designed_form_schema_describes_fields_for_the_model() -> None:
    schema = _schemas(_spec())["ask_human_form"]
    assert set(schema["required"]) == {"title", "fields"}
    item = schema["properties"]["fields"]["items"]
    # Flat and inline: only a label is required, options are plain strings.
    assert item["required"] == ["label"]
    assert "phone_number" in item["properties"]["type"]["enum"]
    assert item["properties"]["options"]["items"] == {"type": "string"}
    assert "pattern" in item["properties"]


@pytest.mark.parametrize(
    "options",
    [{}, {"expose_recipients": True}, {"channel_id": "ch_abcdefghijklmnopqrstuvwx"}],
)
def test_schemas_are_plain_for_small_models(options: dict[str, Any]) -> None:
    for name, schema in _schemas(_spec(**options)).items():
        for node in _walk(schema):
            assert "$ref" not in node and "$defs" not in node and "anyOf" not in node, name


def test_descriptions_say_what_comes_back() -> None:
    tools = {t.metadata.get_name(): t.metadata for t in _spec(wait_time=45).to_tool_list()}
    assert "45 seconds" in tools["ask_human_sms"].description
    assert "normal" in tools["ask_human_sms"].description
    assert "summary" in tools["call_human"].description
    later = {
        t.metadata.get_name(): t.metadata for t in _spec(wait_for_call_end=False).to_tool_list()
    }
    assert "summary" not in later["call_human"].description
    assert "interaction id" in later["call_human"].description
    note = tools["notify_human"].get_parameters_dict()["properties"]["message"]["description"]
    assert "do not ask a question" in note


def test_fixed_form_takes_no_design_arguments() -> None:
    spec = _spec(
        form_title="Delivery address",
        form_fields=[{"id": "address", "label": "Address", "type": "address", "required": True}],
    )
    schema = _schemas(spec)["ask_human_form"]
    assert set(schema["properties"]) == {"message"}
    tool = {t.metadata.get_name(): t for t in spec.to_tool_list()}["ask_human_form"]
    assert "Delivery address" in tool.metadata.description


def test_spec_functions_pick_tools() -> None:
    tools = _spec().to_tool_list(spec_functions=["ask_human_sms", ("notify_human", "x")])
    assert [t.metadata.get_name() for t in tools] == ["ask_human_sms", "notify_human"]
    with pytest.raises(ValueError, match="unknown humanwire tool"):
        _spec().to_tool_list(spec_functions=["send_fax"])


def test_bad_configuration_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="wait_time"):
        _spec(wait_time=0)
    with pytest.raises(ValueError, match="wait_time"):
        _spec(wait_time=None)
    with pytest.raises(ValueError, match="voice"):
        _spec(voice="robot")
    with pytest.raises(ValueError, match="language"):
        _spec(language="english please")
    with pytest.raises(ValueError, match="invalid to number"):
        _spec(transfer_to="12345")
    with pytest.raises(ValueError, match="form_channel"):
        _spec(form_channel="pigeon")
    with pytest.raises(ValueError, match="form_title"):
        _spec(form_fields=[{"id": "a", "label": "A", "type": "text"}])


def test_remote_service_without_recipient_names_the_variable() -> None:
    # A configuration mistake is the developer's: refused when the tools are made, not
    # handed to the model at its first call.
    spec = HumanWireToolSpec(REMOTE, to="+14155550123")
    with pytest.raises(ValueError, match="HUMANWIRE_SLACK_TO"):
        spec.to_tool_list()
    with pytest.raises(ValueError, match="HUMANWIRE_SLACK_TO"):
        spec.ask_human_slack("Hello?")
    # Leaving the slack tool out works, and notify offers only the channels it can reach.
    tools = spec.to_tool_list(spec_functions=["ask_human_sms", "notify_human", "call_human"])
    notify = tools[1].metadata.get_parameters_dict()["properties"]["channel"]
    assert notify["enum"] == ["sms", "whatsapp"]
    bare = HumanWireToolSpec(REMOTE)
    with pytest.raises(ValueError, match="HUMANWIRE_SMS_TO"):
        bare.to_tool_list(spec_functions=["ask_human_form"])
    with pytest.raises(ValueError, match="notify_human"):
        bare.to_tool_list(spec_functions=["notify_human"])
    with pytest.raises(ValueError, match="HUMANWIRE_SMS_TO"):
        bare.ask_human_sms("Hello?")
    assert len(bare.to_tool_list(spec_functions=["check_human_interaction"])) == 1
    # With the recipient exposed the model may name one; without it, it is told to.
    exposed = HumanWireToolSpec(REMOTE, expose_recipients=True)
    [ask] = exposed.to_tool_list(spec_functions=["ask_human_sms"])
    output = ask.call(message="Hello?")
    assert output.is_error and "give 'to'" in output.content


def test_environment_recipient_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANWIRE_SMS_TO", "+14155550123")
    monkeypatch.setenv("HUMANWIRE_SLACK_TO", "C0OPS00001")
    spec = HumanWireToolSpec(REMOTE)
    assert spec._recipient("sms", None) == "+14155550123"
    assert spec._recipient("slack", None) == "C0OPS00001"
    with pytest.raises(ValueError, match="HUMANWIRE_WHATSAPP_TO"):
        spec._recipient("whatsapp", None)
    assert _spec(to="+442079460123")._recipient("sms", None) == ("+442079460123")


def test_email_is_offered_once_it_has_a_recipient() -> None:
    spec = _spec(email_to="ada@example.com")
    schemas = _schemas(spec)
    assert set(schemas) == ALL | {"ask_human_email"}
    assert schemas["ask_human_email"]["required"] == ["message"]
    notify = schemas["notify_human"]["properties"]["channel"]
    assert notify["enum"] == ["sms", "whatsapp", "slack", "email"]
    exposed = _schemas(_spec(expose_recipients=True))
    assert "email address" in exposed["ask_human_email"]["properties"]["to"]["description"]


def test_teams_is_offered_once_it_has_a_recipient(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "ask_human_teams" not in _schemas(_spec())
    spec = _spec(teams_to="29:1a2b3c")
    schemas = _schemas(spec)
    assert set(schemas) == ALL | {"ask_human_teams"}
    assert spec._recipient("teams", None) == "29:1a2b3c"
    assert schemas["notify_human"]["properties"]["channel"]["enum"] == [
        "sms",
        "whatsapp",
        "slack",
        "teams",
    ]
    monkeypatch.setenv("HUMANWIRE_TEAMS_TO", "29:from-the-env")
    assert _spec()._recipient("teams", None) == "29:from-the-env"
    exposed = _schemas(_spec(expose_recipients=True))
    assert "29:" in exposed["ask_human_teams"]["properties"]["to"]["description"]


def test_discord_is_offered_once_it_has_a_recipient(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "ask_human_discord" not in _schemas(_spec())
    spec = _spec(discord_to="80351110224678912")
    schemas = _schemas(spec)
    assert set(schemas) == ALL | {"ask_human_discord"}
    assert spec._recipient("discord", None) == "80351110224678912"
    assert schemas["notify_human"]["properties"]["channel"]["enum"] == [
        "sms",
        "whatsapp",
        "slack",
        "discord",
    ]
    monkeypatch.setenv("HUMANWIRE_DISCORD_TO", "175928847299117063")
    assert _spec()._recipient("discord", None) == "175928847299117063"
    exposed = _schemas(_spec(expose_recipients=True))
    assert "Discord user ID" in exposed["ask_human_discord"]["properties"]["to"]["description"]
