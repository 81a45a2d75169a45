"""The README's screenshots, taken the way ``browser_screenshots.py`` takes them (into a
temporary directory here, so the script cannot rot)."""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path
from types import ModuleType

import pytest
from browser_screenshots import take_screenshots
from playwright.sync_api import Browser

from console_support import grantable_service
from humanwire.testing.service import RunningService

pytestmark = pytest.mark.browser

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    module = _script("approval_screenshots")
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


def test_the_console_guide_screenshots(browser: Browser, tmp_path: Path) -> None:
    """``scripts/console_screenshots.py``, run into a temporary directory on a service of
    its own (``deploy`` grantable, as the script's own run makes it): each screen at each
    width, cut at the script's height."""
    module = _script("console_screenshots")
    with grantable_service(str(tmp_path / "console-screens.db")) as service:
        written = module.take_console_screenshots(browser, service, tmp_path / "out")
    expected = [f"console-{s}-{size}.png" for s in module.SCREENS for size in module.SIZES]
    assert [p.name for p in written] == expected
    assert "grants" in module.SCREENS and "away" in module.SCREENS
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC), path
        assert 10_000 < len(data) < 250_000, path
        width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
        assert height <= module.MAX_HEIGHT, path
        if "grants" not in path.name:  # the grants are a panel of the queue, not a page
            assert width == module.SIZES[path.stem.rsplit("-", 1)[1]], path
