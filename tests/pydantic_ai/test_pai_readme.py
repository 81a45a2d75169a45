"""The README's "Pydantic AI" example, which docs/frameworks/pydantic-ai.md opens with,
runs as written against the loopback service from the environment, with a scripted model
in the place of ``"openai:gpt-5"``: the payment waits for the approval form, then runs."""

from __future__ import annotations

from typing import Any

import pytest
from pai_helpers import scripted

from approval_support import approval_link
from framework_support import readme_example
from humanwire.testing import RunningService, ScriptedHuman


def test_the_readme_example_runs(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    code = readme_example("Pydantic AI")
    model = scripted([("wire_money", {"amount": 4200, "to_account": "venue"})])
    filled = human.decide_approval("approve")
    namespace: dict[str, Any] = {"model": model.model}
    exec(compile(code.replace('"openai:gpt-5"', "model"), "README-pydantic-ai", "exec"), namespace)
    assert approval_link(filled.wait(10).text) is not None
    # The approved call ran: its result (the example's body is ``...``) reached the model.
    (returned,) = model.returns()
    assert returned.tool_name == "wire_money" and returned.outcome == "success"
    assert capsys.readouterr().out.strip() == "FINAL: None"
