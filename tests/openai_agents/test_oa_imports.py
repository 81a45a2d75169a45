"""Import isolation: ``import humanwire`` loads no OpenAI Agents SDK; without the extra the
adapter names the install command."""

from __future__ import annotations

from framework_support import import_error_without, modules_loaded_by


def test_import_humanwire_loads_no_agents_sdk() -> None:
    assert modules_loaded_by("humanwire, humanwire.approval", ["agents", "openai"]) == []


def test_missing_extra_gives_install_hint() -> None:
    error = import_error_without(["agents"], "humanwire.openai_agents")
    assert 'pip install "humanwire[openai-agents]"' in error
