"""Import isolation: ``import humanwire`` loads no Microsoft Agent Framework; without the
extra the adapter names the install command."""

from __future__ import annotations

from framework_support import import_error_without, modules_loaded_by


def test_import_humanwire_loads_no_agent_framework() -> None:
    # The shared layer the adapter stands on is framework-neutral too.
    imports = (
        "humanwire, humanwire.approval, humanwire._tooling, humanwire._pauses, "
        "humanwire._tool_clients, humanwire._tool_kinds"
    )
    assert modules_loaded_by(imports, ["agent_framework"]) == []


def test_missing_extra_gives_install_hint() -> None:
    error = import_error_without(["agent_framework"], "humanwire.agent_framework")
    assert 'pip install "humanwire[agent-framework]"' in error
