"""The LangChain tools are the tool table's: a class per row, and a row added to the table
is a LangChain tool in one line (the kind joined to the adapter's base)."""

from __future__ import annotations

import pytest
from langchain_core.tools import BaseTool
from lc_helpers import PHONE, Mode, run_tool

from framework_support import check_tools_follow_the_table, pinging_kind
from humanwire import AsyncHumanWire, HumanWire
from humanwire.langchain import HumanWireTool, HumanWireToolkit
from humanwire.testing import ScriptedHuman


def test_a_class_per_row_of_the_table() -> None:
    import humanwire.langchain

    check_tools_follow_the_table(humanwire.langchain)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_new_kind_is_a_tool_in_one_line(
    humanwire_client: HumanWire,
    async_humanwire_client: AsyncHumanWire,
    human: ScriptedHuman,
    mode: Mode,
) -> None:
    kind = pinging_kind()

    class PingHuman(kind, HumanWireTool): ...  # type: ignore[misc, valid-type]

    tool = PingHuman(client=humanwire_client, async_client=async_humanwire_client)
    assert isinstance(tool, BaseTool) and tool.name == "ping_human"
    assert tool.description == "Ping a person by SMS. Nothing is awaited."
    assert tool.args_schema is tool.args_model
    silent = human.stay_silent(channel="sms")
    message = await run_tool(tool, {"message": "hello"}, mode)
    delivery = await silent.async_wait()
    assert (delivery.to, delivery.text) == (PHONE, "ping: hello")
    assert message.content == f"pinged ({delivery.interaction_id})"


def test_the_toolkit_finds_each_channels_tools_in_the_table(humanwire_client: HumanWire) -> None:
    channels = ("sms", "whatsapp", "slack", "email")
    toolkit = HumanWireToolkit(client=humanwire_client, channels=channels, notify=True)
    names = [tool.name for tool in toolkit.get_tools()]
    assert names[:8] == [f"ask_human_{c}" for c in channels] + [
        f"notify_human_{c}" for c in channels
    ]
