"""The README's "Strands Agents" example runs as written, against the loopback service from
the environment, with the scripted model in place of Strands' default (Bedrock): the
agent asks the customer by SMS, the refund waits for a person's approval, then runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from strands_helpers import scripted

from humanwire.testing import RunningService, ScriptedHuman

README = Path(__file__).resolve().parents[2] / "README.md"


def example() -> str:
    section = README.read_text(encoding="utf-8").split("## Strands Agents", 1)[1]
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
    assert len(code.splitlines()) == 10  # "a ten-line example"
    assert code.count("Agent(tools=") == 1
    model = scripted(
        [("ask_human_sms", {"message": "Shall we refund order 1042?"})],
        [("refund", {"order_id": "1042", "amount": 25.0})],
    )
    human.reply("yes please")
    approval = human.fill_form({"decision": "approve"})

    exec(code.replace("Agent(tools=", "Agent(model=model, tools="), {"model": model})

    # Strands' default callback handler prints the run as it streams; print() the result.
    out = capsys.readouterr().out
    assert "Tool #2: refund" in out
    assert out.rstrip().endswith("FINAL: success: Refunded 25.0 on order 1042.")
    assert model.results[0]["content"] == [{"text": "Human response: yes please"}]
    assert approval.wait(5).kind == "form"
