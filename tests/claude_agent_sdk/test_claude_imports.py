"""Import isolation: ``import humanwire`` loads no Claude Agent SDK; without the extra the
adapter names the install command."""

from __future__ import annotations

from framework_support import import_error_without, modules_loaded_by


def test_import_humanwire_loads_no_claude_agent_sdk() -> None:
    imports = (
        "humanwire, humanwire.approval, humanwire._tooling, humanwire._pauses, "
        "humanwire._tool_clients, humanwire._tool_kinds"
    )
    assert modules_loaded_by(imports, ["claude_agent_sdk"]) == []


def test_missing_extra_gives_install_hint() -> None:
    error = import_error_without(["claude_agent_sdk"], "humanwire.claude_agent_sdk")
    assert 'pip install "humanwire[claude-agent-sdk]"' in error
