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


def _spec(**kwargs: Any) -> HumanWireToolSpec:
    # A remote base URL: nothing is sent in these tests, and no embedded service starts.
    client = HumanWire(api_key="k", base_url="https://humanwire.example")
    return HumanWireToolSpec(client, **kwargs)


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
    assert "select" in schema["properties"]["fields"]["description"]
    text = str(schema)
    # The field model itself travels with the schema: types and options are visible.
    assert "phone_number" in text and "options" in text


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
    with pytest.raises(ValueError, match="form_channel"):
        _spec(form_channel="pigeon")
    with pytest.raises(ValueError, match="form_title"):
        _spec(form_fields=[{"id": "a", "label": "A", "type": "text"}])


def test_remote_service_without_recipient_names_the_variable() -> None:
    spec = _spec()
    with pytest.raises(ValueError, match="HUMANWIRE_SMS_TO"):
        spec.ask_human_sms("Hello?")
    tool = {t.metadata.get_name(): t for t in spec.to_tool_list()}["ask_human_slack"]
    # A configuration mistake is the developer's: it is raised, not handed to the model.
    with pytest.raises(ValueError, match="HUMANWIRE_SLACK_TO"):
        tool.call(message="Hello?")


def test_environment_recipient_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANWIRE_SMS_TO", "+14155550123")
    spec = _spec()
    assert spec._recipient("sms", None) == "+14155550123"
    assert _spec(to="+442079460123")._recipient("sms", None) == ("+442079460123")
