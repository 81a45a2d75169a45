"""The README's screenshots, taken the way ``browser_screenshots.py`` takes them (into a
temporary directory here, so the script cannot rot)."""

from __future__ import annotations

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
