"""The README's "Strands Agents" example runs as written, against the loopback service from
the environment, with the scripted model in place of Strands' default (Bedrock): the
agent asks the customer by SMS, the refund waits for a person's approval, then runs."""

from __future__ import annotations

import pytest
from strands_helpers import scripted

from approval_support import approval_link
from framework_support import readme_example
from humanwire.testing import RunningService, ScriptedHuman


def test_the_readme_example_runs(
    service_environment: RunningService,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = readme_example("Strands Agents")
    assert len(code.splitlines()) == 10  # "a ten-line example"
    assert code.count("Agent(tools=") == 1
    model = scripted(
        [("ask_human_sms", {"message": "Shall we refund order 1042?"})],
        [("refund", {"order_id": "1042", "amount": 25.0})],
    )
    human.reply("yes please")
    approval = human.decide_approval("approve")

    exec(code.replace("Agent(tools=", "Agent(model=model, tools="), {"model": model})

    # Strands' default callback handler prints the run as it streams; print() the result.
    out = capsys.readouterr().out
    assert "Tool #2: refund" in out
    assert out.rstrip().endswith("FINAL: success: Refunded 25.0 on order 1042.")
    assert model.results[0]["content"] == [{"text": "Human response: yes please"}]
    assert approval_link(approval.wait(5).text)
