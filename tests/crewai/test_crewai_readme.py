"""The README's "CrewAI" example runs as written, against the loopback service from the
environment, with the scripted model in place of ``"gpt-5"``: the agent asks the buyer by
SMS, the refund waits for a person's approval, then runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from crewai_helpers import ScriptedLLM

from humanwire.testing import RunningService, ScriptedHuman

README = Path(__file__).resolve().parents[2] / "README.md"


def example() -> str:
    section = README.read_text(encoding="utf-8").split("\n## CrewAI\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    assert found is not None
    return found.group(1)


def test_the_readme_example_runs(
    monkeypatch: pytest.MonkeyPatch,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    code = example()
    assert code.count('llm="gpt-5"') == 1
    llm = ScriptedLLM(
        model="fake",
        steps=[
            ("ask_human_sms", {"message": "Shall we refund order 1042?"}),
            ("refund", {"order_id": "1042", "amount": 25.0}),
        ],
    )
    human.reply("yes please")
    approval = human.fill_form({"decision": "approve"})

    exec(compile(code.replace('llm="gpt-5"', "llm=llm"), "README-crewai", "exec"), {"llm": llm})

    assert capsys.readouterr().out.strip().splitlines()[-1] == "Refunded 25.0 on order 1042."
    assert llm.observations[0] == "Human response: yes please"
    assert approval.wait(5).kind == "form"
