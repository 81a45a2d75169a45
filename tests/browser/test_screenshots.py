"""The README's screenshots, taken the way ``browser_screenshots.py`` takes them (into a
temporary directory here, so the script cannot rot)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from browser_screenshots import take_screenshots
from playwright.sync_api import Browser

from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_screenshots_of_the_form_and_the_inbox(
    browser: Browser, humanwire_service: RunningService, tmp_path: Path
) -> None:
    written = take_screenshots(browser, humanwire_service, tmp_path)
    assert sorted(p.name for p in written) == [
        "form-desktop.png",
        "form-phone.png",
        "inbox-desktop.png",
        "inbox-phone.png",
    ]
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC), path
        assert len(data) > 20_000, path  # a real page, not a blank one


def test_the_approval_guide_screenshots(
    browser: Browser, humanwire_service: RunningService, tmp_path: Path
) -> None:
    """``scripts/approval_screenshots.py``, run into a temporary directory."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "approval_screenshots.py"
    spec = importlib.util.spec_from_file_location("approval_screenshots", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.take_approval_screenshots(browser, humanwire_service, tmp_path)
    assert sorted(p.name for p in written) == [
        "approval-inbox.png",
        "approval-page.png",
        "approval-slack-blocks.json",
        "approval-slack.png",
    ]
    for path in written:
        if path.suffix == ".png":
            data = path.read_bytes()
            assert data.startswith(PNG_MAGIC), path
            assert 10_000 < len(data) < 150_000, path
    blocks = json.loads((tmp_path / "approval-slack-blocks.json").read_text())
    assert [b["type"] for b in blocks] == ["section", "actions"]
