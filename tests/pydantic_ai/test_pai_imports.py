"""Import isolation: ``import humanwire`` loads no Pydantic AI; without the extra the
adapter names the install command."""

from __future__ import annotations

from framework_support import import_error_without, modules_loaded_by


def test_import_humanwire_loads_no_pydantic_ai() -> None:
    imports = "humanwire, humanwire.approval, humanwire._tooling"
    assert modules_loaded_by(imports, ["pydantic_ai"]) == []


def test_missing_extra_gives_install_hint() -> None:
    error = import_error_without(["pydantic_ai"], "humanwire.pydantic_ai")
    assert 'pip install "humanwire[pydantic-ai]"' in error
