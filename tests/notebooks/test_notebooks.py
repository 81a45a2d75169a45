"""The notebooks in ``notebooks/`` run top to bottom on the embedded service.

Each runs in a fresh ``python3`` kernel on this interpreter, with a private
``HUMANWIRE_HOME`` and ``HUMANWIRE_EMBEDDED_PORT=0`` (a free port), so runs never share
a service or a database. The scripted human answers; the assertions read what the
cells printed, by cell id.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CELL_TIMEOUT = 60
"""Seconds any one cell may take; the slowest waits at most 15 s for the human."""

_PROBE = "import os, sys\nprint(sys.executable)\nprint(os.environ['HUMANWIRE_HOME'])"
_CONFIG_VARIABLES = {
    "HUMANWIRE_BASE_URL",
    "HUMANWIRE_API_KEY",
    "HUMANWIRE_SMS_TO",
    "HUMANWIRE_WHATSAPP_TO",
    "HUMANWIRE_SLACK_TO",
}
NO_RESPONSE = "Human did not respond. Continue where you left off."

EXECUTED = [
    "01_quickstart.ipynb",
    "02_langgraph_approval.ipynb",
    "03_llama_index.ipynb",
    "04_openai_agents.ipynb",
    "05_pydantic_ai.ipynb",
]
"""The notebooks the tests below run."""

pytestmark = pytest.mark.notebook


def _read(path: Path) -> Any:
    # nbformat ships type hints but leaves these functions unannotated.
    return nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]


def _stdout(cell: Any) -> str:
    return "".join(
        output["text"]
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stdout"
    )


def run_notebook(name: str, tmp_path: Path) -> dict[str, str]:
    """Executes ``notebooks/<name>`` and returns each code cell's stdout by cell id."""
    notebook = _read(NOTEBOOKS / name)
    # Appended in memory only: proves which interpreter and home the kernel used.
    probe = nbformat.v4.new_code_cell(_PROBE)  # type: ignore[no-untyped-call]
    probe.id = "test-probe"
    notebook.cells.append(probe)

    home = tmp_path / "home"
    workdir = tmp_path / "work"
    workdir.mkdir()
    # Nothing from the caller's environment may point the notebook at another service
    # or another recipient.
    env = {key: value for key, value in os.environ.items() if key not in _CONFIG_VARIABLES}
    env.update({"HUMANWIRE_HOME": str(home), "HUMANWIRE_EMBEDDED_PORT": "0"})

    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute(env=env)  # raises CellExecutionError, with the traceback, on any error

    outputs = {cell.id: _stdout(cell) for cell in notebook.cells if cell.cell_type == "code"}
    executable, kernel_home = outputs.pop("test-probe").splitlines()
    assert Path(executable).resolve() == Path(sys.executable).resolve()
    assert kernel_home == str(home)
    # The notebook's own embedded service lived in the private home.
    assert (home / "embedded.json").is_file()
    return outputs


def test_quickstart(tmp_path: Path) -> None:
    out = run_notebook(EXECUTED[0], tmp_path)

    assert "inbox:" in out["setup"] and "/inbox?key=hw_" in out["setup"]
    assert out["ask-sms"].splitlines() == ["responded: True", "Human response: Lisbon"]
    form = out["send-form"]
    assert "/f/" in form
    assert "values:    {'nights': '2', 'hotel': 'comfort', 'contact': 'ada@example.com'}" in form
    assert "Nights: 2\nHotel: Comfort\nContact email: ada@example.com" in form
    assert out["silent-human"].splitlines() == [
        "responded: False",
        NO_RESPONSE,
        "the text did arrive: Anyone around for a quick question?",
    ]
    assert "['ask_human_sms', 'human_form']" in out["build-agent"]
    agent = out["run-agent"]
    assert "  tool: Human response: Porto, please" in agent
    assert "Budget in EUR: 3000\nRoom type: Single" in agent
    assert agent.rstrip().endswith("ai: Planning the offsite in Porto: 3000 EUR, single rooms.")
    artifact = out["agent-form-artifact"]
    assert "artifact values: {'budget': '3000', 'rooms': 'Single'}" in artifact
    # Everything the notebook sent reached the human: three texts and two forms.
    assert artifact.count("message sms to +12025550100") == 3
    assert artifact.count("form    sms to +12025550100") == 2


def test_langgraph_approval(tmp_path: Path) -> None:
    out = run_notebook(EXECUTED[1], tmp_path)

    assert "['approval.decided']" in out["setup"]
    assert out["decided-in-window"].strip() == (
        "Not published. Rejected by a human: Wrong topic for this week."
    )
    paused = out["paused"]
    assert "paused: True" in paused
    assert "approval page still open at:" in paused
    assert "next node: ('approve',)" in paused
    resumed = out["webhook-resume"]
    assert "webhook: approval.decided approved" in resumed
    assert "signature verified: True" in resumed
    assert "Published: 'Five things we learned about webhooks'" in resumed
    assert "decision: Approved by a human: Great, ship it." in resumed
    assert out["repeated-event"].strip() == "resumed again: None"
    assert "approval texts sent for the paused approval: 1\n" in out["one-form"]
    assert "approval texts sent in total (two threads): 2" in out["one-form"]


def test_llama_index(tmp_path: Path) -> None:
    out = run_notebook(EXECUTED[2], tmp_path)

    assert "'ask_human_sms'" in out["tool-spec"] and "'ask_human_form'" in out["tool-spec"]
    assert out["call-tools"].splitlines() == ["Human response: Tuesday works for me", NO_RESPONSE]
    agent = out["run-agent"]
    assert "tool ask_human_sms -> 'Human response: Aisle, please'" in agent
    assert (
        "tool ask_human_form -> "
        "'The human submitted the form:\\nDeparture date: 2026-05-04\\nChecked bag: Yes'"
    ) in agent
    assert "Booking with what the traveller told me:" in agent
    workflow = out["workflow-approval"]
    assert "waiting for approval of deploy {'version': '2.4.0', 'env': 'production'}" in workflow
    assert "approval request: " in workflow
    assert "Deployed 2.4.0. Approved by a human: Go ahead, I'm on call." in workflow
    assert out["guarded-tool"].splitlines() == [
        "refund_order was not run. Rejected by a human: Amount too high, send it to finance.",
        "refunds actually made: []",
    ]
    pause = out["durable-pause"].splitlines()
    assert pause[0] == "finished: False"
    assert pause[1].startswith("waiting for: deploy ") and len(pause[1].split()) == 4
    assert pause[2] == "saved runs: 1"
    assert out["durable-resume"].splitlines() == [
        "Deployed 3.0.0. Approved by a human: Approved after review.",
        "saved runs left: []",
        "texts sent for this approval: 1",
    ]


def _assert_agent_and_approvals(out: dict[str, str]) -> None:
    """The checks notebooks 04 and 05 share: their scripted model answers with every
    tool result it was given, so what it printed is what reached the model."""
    assert out["run-agent"].splitlines() == [
        "Human response: Aisle, please",
        "The human submitted the form:",
        "Departure date: 2026-05-04",
        "Checked bag: Yes",
    ]
    # Approved: the tool ran, once.
    assert out["approved"].splitlines() == [
        "Sent 900 EUR to ACME.",
        "payments made: [(900, 'ACME')]",
    ]
    # Rejected: the tool did not run, and the person's reason reached the model.
    assert out["rejected"].splitlines() == [
        "send_payment was not run: a human rejected it. Reason: Wrong account, ask finance",
        "payments made: [(900, 'ACME')]",
    ]


def test_openai_agents(tmp_path: Path) -> None:
    _assert_agent_and_approvals(run_notebook(EXECUTED[3], tmp_path))


def test_pydantic_ai(tmp_path: Path) -> None:
    _assert_agent_and_approvals(run_notebook(EXECUTED[4], tmp_path))


def test_every_notebook_is_executed_here() -> None:
    """A new notebook needs its own test above, or it would never be run."""
    assert sorted(path.name for path in NOTEBOOKS.glob("*.ipynb")) == sorted(EXECUTED)


@pytest.mark.parametrize("path", [NOTEBOOKS / name for name in EXECUTED], ids=EXECUTED)
def test_notebooks_are_stored_clean(path: Path) -> None:
    """Stored without outputs (small diffs, no keys or ports), for the python3 kernel."""
    notebook = _read(path)
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: cell {cell.id} has outputs"
            assert cell.execution_count is None, f"{path.name}: cell {cell.id} was run"
