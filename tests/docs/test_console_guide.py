"""The console guide's pictures (docs/guides/console.md) and the script that takes them
(scripts/console_screenshots.py) agree: the guide shows every screen the script names, at
each of its sizes, each picture it links is in docs/screenshots, and no console picture
there is left unlinked. (The script itself runs in tests/browser/test_screenshots.py.)"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

from docs_support import DOCS, ROOT

GUIDE = DOCS / "guides" / "console.md"
SHOTS = DOCS / "screenshots"


def _script() -> ModuleType:
    path = ROOT / "scripts" / "console_screenshots.py"
    spec = importlib.util.spec_from_file_location("console_screenshots", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guide_shows_each_screen_the_script_takes() -> None:
    script = _script()
    taken = {f"console-{s}-{size}.png" for s in script.SCREENS for size in script.SIZES}
    linked = re.findall(r"\]\(\.\./screenshots/(console-[^)]+)\)", GUIDE.read_text("utf-8"))
    assert len(linked) == len(set(linked)), linked  # each picture shown once
    assert set(linked) == taken
    assert {p.name for p in SHOTS.glob("console-*")} == taken
    for name in taken:
        assert (SHOTS / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), name
