"""The package boundaries hold (docs/explanation/architecture.md, "Package boundaries"):
``lint-imports`` checks the contracts in ``.importlinter`` against the import graph of
``src/humanwire``, imports inside functions and under TYPE_CHECKING included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists(), 'pip install -e ".[dev]" installs import-linter'
    # This checkout's source, whatever the environment's install points at.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert ", 0 broken." in done.stdout, done.stdout


def test_the_slack_fake_grants_the_scopes_the_service_asks_for() -> None:
    # The fake writes Slack's side out instead of importing the implementation's list:
    # here the two are compared, not made equal by construction.
    from humanwire.server.delivery.slack import BOT_SCOPES
    from humanwire.testing.slack import DEFAULT_SCOPES

    assert set(DEFAULT_SCOPES) == set(BOT_SCOPES)
