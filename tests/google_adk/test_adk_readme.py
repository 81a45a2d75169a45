"""The README's "Google ADK" example runs as written, against the loopback service from
the environment, with the scripted model in place of ``"gemini-2.5-flash"``: the agent asks
the customer by SMS, the refund waits for a person's approval, then runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from adk_helpers import FakeLlm

from humanwire.testing import RunningService, ScriptedHuman

README = Path(__file__).resolve().parents[2] / "README.md"


def example() -> str:
    section = README.read_text(encoding="utf-8").split("## Google ADK", 1)[1]
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
    assert code.count('model="gemini-2.5-flash"') == 1
    model = FakeLlm.script(
        ("ask_human_sms", {"message": "Shall we refund order 1042?"}),
        ("refund", {"order_id": "1042", "amount": 25.0}),
    )
    human.reply("yes please")
    approval = human.fill_form({"decision": "approve"})

    compiled = compile(
        code.replace('model="gemini-2.5-flash"', "model=model"),
        "README-google-adk",
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
    )
    await eval(compiled, {"model": model})

    # run_debug prints the conversation too; the example's own print is the last line.
    assert capsys.readouterr().out.strip().splitlines()[-1] == "FINAL: Refunded 25.0 on order 1042."
    assert model.outputs[0] == "Human response: yes please"
    assert (await approval.async_wait(5)).kind == "form"
