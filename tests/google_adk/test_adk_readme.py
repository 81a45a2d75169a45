"""The README's "Google ADK" example runs as written, against the loopback service from
the environment, with the scripted model in place of ``"gemini-2.5-flash"``: the agent asks
the customer by SMS, the refund waits for a person's approval, then runs."""

from __future__ import annotations

import ast

import pytest
from adk_helpers import FakeLlm

from approval_support import approval_link
from framework_support import readme_example
from humanwire.testing import RunningService, ScriptedHuman


async def test_the_readme_example_runs(
    service_environment: RunningService,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = readme_example("Google ADK")
    assert code.count('model="gemini-2.5-flash"') == 1
    model = FakeLlm.script(
        ("ask_human_sms", {"message": "Shall we refund order 1042?"}),
        ("refund", {"order_id": "1042", "amount": 25.0}),
    )
    human.reply("yes please")
    approval = human.decide_approval("approve")

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
    assert approval_link((await approval.async_wait(5)).text)
