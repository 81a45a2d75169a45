"""A user's type checker sees every adapter's tool classes: ``from humanwire.agno import
AskHumanSMS`` is the class, not a missing name. mypy runs over a small user file with
third-party packages skipped (only humanwire's own modules are read), so the check takes
seconds, not the minutes a whole framework costs.

LangChain's are left out: its tools are pydantic models, whose synthesised ``__init__``
(``name``, ``description`` required) a type checker would hold ``AskHumanSMS()`` to, so
its module keeps them out of sight of type checkers (they are ``Any`` there) until the
kinds' constructors are declared on the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from humanwire._tool_kinds import TOOL_CLASS_NAMES

mypy_api = pytest.importorskip("mypy.api")

ADAPTERS = (
    "agent_framework",
    "agno",
    "claude_agent_sdk",
    "crewai",
    "google_adk",
    "openai_agents",
    "pydantic_ai",
    "strands",
)
CONFIG = """\
[mypy]
follow_imports = skip
ignore_missing_imports = True
[mypy-humanwire.*]
follow_imports = normal
"""


def test_every_adapters_tool_classes_are_classes_to_a_type_checker(tmp_path: Path) -> None:
    lines = []
    for adapter in ADAPTERS:
        for name in TOOL_CLASS_NAMES:
            lines.append(f"from humanwire.{adapter} import {name} as {adapter}_{name}")
            lines.append(f"reveal_type({adapter}_{name})")
    user = tmp_path / "user.py"
    user.write_text("\n".join(lines) + "\n")
    config = tmp_path / "mypy.ini"
    config.write_text(CONFIG)
    out, err, status = mypy_api.run(
        ["--config-file", str(config), "--no-incremental", "--cache-dir", "/dev/null", str(user)]
    )
    assert status == 0, out + err
    revealed = [line for line in out.splitlines() if "Revealed type is" in line]
    assert len(revealed) == len(ADAPTERS) * len(TOOL_CLASS_NAMES)
    for adapter in ADAPTERS:
        for name in TOOL_CLASS_NAMES:
            assert any(f'-> humanwire.{adapter}.tools.{name}"' in line for line in revealed), (
                adapter,
                name,
            )
