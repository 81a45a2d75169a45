"""The README's "OpenAI Agents SDK" example runs as written, against the loopback service
from the environment, with the scripted model in place of ``"gpt-5"``: the agent asks the
customer by SMS, the refund waits for a person's approval, then runs."""

from __future__ import annotations

import ast

import pytest
from oa_helpers import FakeModel

from approval_support import approval_link
from framework_support import readme_example
from humanwire.testing import RunningService, ScriptedHuman


async def test_the_readme_example_runs(
    service_environment: RunningService,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = readme_example("OpenAI Agents SDK")
    assert code.count('model="gpt-5"') == 1
    model = FakeModel(
        ("ask_human_sms", {"message": "Shall we refund order 1042?"}),
        ("refund", {"order_id": "1042", "amount": 25.0}),
    )
    human.reply("yes please")
    approval = human.decide_approval("approve")

    compiled = compile(
        code.replace('model="gpt-5"', "model=model"),
        "README-openai-agents",
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
    )
    await eval(compiled, {"model": model})

    assert capsys.readouterr().out.strip() == "FINAL: Refunded 25.0 on order 1042."
    assert model.outputs[0] == "Human response: yes please"
    assert approval_link((await approval.async_wait(5)).text)
