"""The Microsoft Agent Framework page's first example runs as written, on the loopback
service from the environment (as the embedded one would be), with the scripted chat
client in place of a real one: the agent asks the customer by SMS, the framework asks
approval for the refund, a person approves it by approval request, and the refund runs
once."""

from __future__ import annotations

import pytest
from agent_framework_helpers import scripted

from approval_support import approval_link
from docs_support import block
from humanwire.testing import RunningService, ScriptedHuman

PAGE = "frameworks/agent-framework.md"
IMPORT = "from agent_framework.openai import OpenAIChatClient\n"


def test_the_first_example_runs(
    service_environment: RunningService,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = block(PAGE, "A first agent", "python")
    assert code.count(IMPORT) == 1 and code.count("OpenAIChatClient()") == 1
    chat = scripted(
        [("ask_human_sms", {"message": "Shall we refund order 1042?"})],
        [("refund", {"order_id": "1042", "amount": 25.0})],
    )
    human.reply("yes please")
    approval = human.decide_approval("approve")

    exec(code.replace(IMPORT, "").replace("OpenAIChatClient()", "chat"), {"chat": chat})

    assert capsys.readouterr().out.rstrip() == "FINAL: Refunded 25.0 on order 1042."
    assert chat.results[0] == "Human response: yes please"
    assert approval_link(approval.wait(5).text)
