"""The LlamaIndex tools are the tool table's: a row added to the table is offered by
``HumanWireToolSpec`` with no LlamaIndex code, its name, description and schema the
kind's, its call the kind's, on the real service."""

from __future__ import annotations

import pytest

from framework_support import PHONE, pinging_kind, table_with
from humanwire import HumanWire
from humanwire.llama_index import HumanWireToolSpec
from humanwire.testing import ScriptedHuman


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_row_added_to_the_table_is_a_tool(
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    kind = pinging_kind()
    table = table_with(kind, "ping_human", "sms")
    monkeypatch.setattr("humanwire.llama_index.tool_spec.TOOL_TABLE", table)
    spec = HumanWireToolSpec(humanwire_client)
    tools = {tool.metadata.get_name(): tool for tool in spec.to_tool_list()}
    ping = tools["ping_human"]
    assert ping.metadata.description == "Ping a person by SMS. Nothing is awaited."
    assert set(ping.metadata.get_parameters_dict()["properties"]) == {"message"}
    silent = human.stay_silent(channel="sms")
    if mode == "sync":
        output = ping.call(message="hello")
    else:
        output = await ping.acall(message="hello")
    delivery = await silent.async_wait()
    assert (delivery.to, delivery.text) == (PHONE, "ping: hello")
    assert (output.is_error, output.content) == (False, f"pinged ({delivery.interaction_id})")
    # Unknown arguments are refused, as for every tool of the spec.
    refused = ping.call(message="hello", channel="sms")
    assert refused.is_error and "unknown property 'channel'" in refused.content


def test_the_table_tools_keep_their_llama_index_names() -> None:
    names = [pair[0] for pair in HumanWireToolSpec.spec_functions]
    assert "ask_human_form" in names and "human_form" not in names
    assert "notify_human" in names and "notify_human_sms" not in names
