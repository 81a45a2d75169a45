"""The Agno page's ten-line example runs as written, on the loopback service from the
environment (as the embedded one would be), with the scripted model in place of a real
one: the agent asks the customer by SMS, Agno pauses at the refund, a person approves it
by approval request, and the refund runs once."""

from __future__ import annotations

import pytest
from agno_helpers import scripted

from approval_support import approval_link
from docs_support import block
from humanwire.testing import RunningService, ScriptedHuman

PAGE = "frameworks/agno.md"


def test_the_ten_line_example_runs(
    service_environment: RunningService,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = block(PAGE, "In ten lines", "python")
    assert len(code.splitlines()) == 10  # "in ten lines"
    assert code.count('model="openai:gpt-5"') == 1
    model = scripted(
        [("ask_human_sms", {"message": "Shall we refund order 1042?"})],
        [("refund", {"order_id": "1042", "amount": 25.0})],
    )
    human.reply("yes please")
    approval = human.decide_approval("approve")

    exec(code.replace('model="openai:gpt-5"', "model=model"), {"model": model})

    assert capsys.readouterr().out.rstrip() == "FINAL: Refunded 25.0 on order 1042."
    assert model.results[0] == "Human response: yes please"
    assert approval_link(approval.wait(5).text)
