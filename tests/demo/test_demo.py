"""The main job: ``humanwire demo --auto`` runs to the end on the embedded service."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def embedded_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HUMANWIRE_HOME", str(tmp_path))
    monkeypatch.setenv("HUMANWIRE_EMBEDDED_PORT", "0")
    monkeypatch.delenv("HUMANWIRE_BASE_URL", raising=False)
    monkeypatch.delenv("HUMANWIRE_API_KEY", raising=False)
    return tmp_path


def test_demo_auto_books_with_the_scripted_answers(embedded_home: Path) -> None:
    from humanwire.demo import run

    out = io.StringIO()
    outcome = run(auto=True, wait_time=15, out=out)
    text = out.getvalue()
    assert outcome == "Booked the offsite in Lisbon."
    # What was sent where, as the human saw it, and what came back.
    assert "→ sms to +12025550100: Hi! Which city" in text
    assert "← Human response: Lisbon" in text
    assert "/a/" in text  # the approval page's link was shown while waiting
    assert "Approval: Approved by a human: Looks good, go ahead." in text
    assert "/inbox?key=hw_" in text


def test_demo_command_line_runs_unattended(embedded_home: Path) -> None:
    env = {**os.environ, "HUMANWIRE_HOME": str(embedded_home), "HUMANWIRE_EMBEDDED_PORT": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "humanwire.cli", "demo", "--auto"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "3. Booked the offsite in Lisbon." in done.stdout
    assert "inbox:" in done.stdout


def test_demo_without_an_answer_carries_on_and_does_not_book(embedded_home: Path) -> None:
    from humanwire.demo import run

    out = io.StringIO()
    outcome = run(auto=False, wait_time=1, follow_up_time=2, stay_online_for=0, out=out)
    text = out.getvalue()
    # Silence is not an error: the agent got the no-response text and went on...
    assert "← Human did not respond. Continue where you left off." in text
    # ... the approval paused durably, then closed undecided: rejected by default.
    assert "paused: the approval is still open" in text
    assert outcome.startswith("Did not book: No approval decision arrived in time")
