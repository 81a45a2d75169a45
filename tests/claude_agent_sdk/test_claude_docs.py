"""The Claude Agent SDK page's ten-line example runs as written, on the loopback service
from the environment (as the embedded one would be), with the bundled CLI pointed at a
scripted model on loopback: the agent asks the customer by SMS, the CLI asks the gate
about the refund, a person approves it by approval request, and the refund runs once."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_helpers import FakeMessagesAPI, cli_environment, scripted

from approval_support import approval_link
from docs_support import block
from humanwire.testing import RunningService, ScriptedHuman

PAGE = "frameworks/claude-agent-sdk.md"


def test_the_ten_line_example_runs(
    service_environment: RunningService,
    human: ScriptedHuman,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    code = block(PAGE, "In ten lines", "python")
    assert len(code.splitlines()) == 10  # "in ten lines"
    assert code.count("gate.options(") == 1
    model = scripted(
        [("ask_human_sms", {"message": "Shall we refund order 1042?"})],
        [("refund", {"order_id": "1042", "amount": 25.5})],
    )
    human.reply("yes please")
    approval = human.decide_approval("approve")
    (tmp_path / "work").mkdir()
    with FakeMessagesAPI(model) as api:
        cli = {
            "env": cli_environment(api.base_url, tmp_path / "home"),
            "cwd": str(tmp_path / "work"),
        }
        # The CLI's model and HOME are the test's; the rest runs as written.
        exec(code.replace("gate.options(", "gate.options(**cli, "), {"cli": cli})

    assert capsys.readouterr().out.rstrip() == "FINAL: Refunded 25.5 on order 1042."
    assert model.results[0] == "Human response: yes please"
    assert approval_link(approval.wait(5).text)
