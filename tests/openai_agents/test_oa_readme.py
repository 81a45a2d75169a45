"""The README's "OpenAI Agents SDK" example runs as written, against the loopback service
from the environment, with the scripted model in place of ``"gpt-5"``: the agent asks the
customer by SMS, the refund waits for a person's approval, then runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from oa_helpers import FakeModel

from humanwire.testing import RunningService, ScriptedHuman

README = Path(__file__).resolve().parents[2] / "README.md"


def example() -> str:
    section = README.read_text(encoding="utf-8").split("## OpenAI Agents SDK", 1)[1]
    found = re.search(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    assert found is not None
    return found.group(1)


async def test_the_readme_example_runs(
    monkeypatch: pytest.MonkeyPatch,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    code = example()
    assert code.count('model="gpt-5"') == 1
    model = FakeModel(
        ("ask_human_sms", {"message": "Shall we refund order 1042?"}),
        ("refund", {"order_id": "1042", "amount": 25.0}),
    )
    human.reply("yes please")
    approval = human.fill_form({"decision": "approve"})

    compiled = compile(
        code.replace('model="gpt-5"', "model=model"),
        "README-openai-agents",
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
    )
    await eval(compiled, {"model": model})

    assert capsys.readouterr().out.strip() == "FINAL: Refunded 25.0 on order 1042."
    assert model.outputs[0] == "Human response: yes please"
    assert (await approval.async_wait(5)).kind == "form"
