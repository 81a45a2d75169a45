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


def _private_names_across_the_server_boundary() -> list[str]:
    """``from X import _name`` where one side is ``humanwire.server`` and the other not:
    import-linter sees modules, not the names taken from them."""
    import ast

    src = ROOT / "src"
    found = []
    for path in (src / "humanwire").rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[:-1]  # a module's package; an __init__'s is its own
        module = ".".join(parts if parts[-1] != "__init__" else parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if not target.startswith("humanwire"):
                continue
            in_server = module.startswith("humanwire.server")
            if in_server == target.startswith("humanwire.server"):
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            private = [name for name in private if not name.startswith("__")]
            found += [f"{module} imports {target}.{name}" for name in private]
    return found


def test_no_private_name_crosses_the_server_boundary() -> None:
    assert _private_names_across_the_server_boundary() == []
