"""The Testing guide's tests pass as written (docs/guides/testing.md), given the fixtures
the plugin gives them: the text answered, the email replied to."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from docs_support import blocks, section
from humanwire import HumanWire
from humanwire.testing import ScriptedHuman

SHOWN = blocks(section("guides/testing.md", None), "python")


@pytest.mark.parametrize("code", SHOWN, ids=["sms", "email"])
def test_the_guides_test_passes(
    code: str, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(code, "testing-guide", "exec"), namespace)
    (test,) = [v for k, v in namespace.items() if k.startswith("test_")]
    fixtures = {"humanwire_client": humanwire_client, "human": human}
    test(**{name: fixtures[name] for name in inspect.signature(test).parameters})
