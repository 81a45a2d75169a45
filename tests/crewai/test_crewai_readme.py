"""The README's "CrewAI" example runs as written, against the loopback service from the
environment, with the scripted model in place of ``"gpt-5"``: the agent asks the buyer by
SMS, the refund waits for a person's approval, then runs."""

from __future__ import annotations

import pytest
from crewai_helpers import ScriptedLLM

from approval_support import approval_link
from framework_support import readme_example
from humanwire.testing import RunningService, ScriptedHuman


def test_the_readme_example_runs(
    service_environment: RunningService,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = readme_example("CrewAI")
    assert code.count('llm="gpt-5"') == 1
    llm = ScriptedLLM(
        model="fake",
        steps=[
            ("ask_human_sms", {"message": "Shall we refund order 1042?"}),
            ("refund", {"order_id": "1042", "amount": 25.0}),
        ],
    )
    human.reply("yes please")
    approval = human.decide_approval("approve")

    exec(compile(code.replace('llm="gpt-5"', "llm=llm"), "README-crewai", "exec"), {"llm": llm})

    assert capsys.readouterr().out.strip().splitlines()[-1] == "Refunded 25.0 on order 1042."
    assert llm.observations[0] == "Human response: yes please"
    assert approval_link(approval.wait(5).text)
