"""The Quickstart's Python runs as written (docs/start/quickstart.md, "Ask a person from
Python"): the client built from the environment, a text answered, a form filled. The
embedded start itself is what ``humanwire demo --auto`` runs in CI (.ci/run)."""

from __future__ import annotations

import pytest

from docs_support import blocks, section
from humanwire.testing import RunningService, ScriptedHuman


def test_the_quickstart_asks_and_gets_the_answers(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    # The one thing the page's reader does not write: where the service is (the page's
    # reader gets the embedded one).
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    ask, form = blocks(section("start/quickstart.md", "Ask a person from Python"), "python")
    human.reply("yes")
    human.fill_form({"ok": True, "note": "within budget"})
    namespace: dict[str, object] = {}
    exec(compile(ask, "quickstart-ask", "exec"), namespace)
    assert capsys.readouterr().out.strip() == "True yes Human response: yes"
    exec(compile(form, "quickstart-form", "exec"), namespace)
    assert capsys.readouterr().out.strip() == "{'ok': 'true', 'note': 'within budget'}"
