"""The Approvals guide's LangChain block runs as written (docs/guides/approvals.md,
"LangChain: block chosen tools"): the handler holds the tool until the inbox's human
approves, and the decorated function runs once both of its approvers said yes."""

from __future__ import annotations

import pytest

from docs_support import block
from humanwire.testing import ScriptedHuman


@pytest.mark.usefixtures("service_environment")
def test_the_guides_gated_tools_run_once_approved(
    capsys: pytest.CaptureFixture[str], human: ScriptedHuman
) -> None:
    code = block("guides/approvals.md", "LangChain: block chosen tools", "python")
    decisions = [
        human.decide_approval("approve"),  # the handler's approver: the inbox's human
        human.decide_approval("approve", to="+14155550123"),
        human.decide_approval("approve", to="U0123ABCD", channel="slack"),
    ]
    exec(compile(code, "approvals-langchain", "exec"), {})
    for decided in decisions:
        decided.wait(10)
    assert capsys.readouterr().out.splitlines() == [
        "Deleted every record of trials.",
        "Wired 4200 to ACME Ltd.",
    ]
