"""Import isolation: ``import humanwire`` loads no Google ADK; without the extra the
adapter names the install command."""

from __future__ import annotations

from framework_support import import_error_without, modules_loaded_by


def test_import_humanwire_loads_no_adk() -> None:
    assert modules_loaded_by("humanwire, humanwire.approval", ["google.adk", "google.genai"]) == []


def test_missing_extra_gives_install_hint() -> None:
    error = import_error_without(["google.adk"], "humanwire.google_adk")
    assert 'pip install "humanwire[google-adk]"' in error
