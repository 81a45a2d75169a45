"""The README and the documentation pages (``docs/``) as tests read them: a page's
section, and the code blocks in it. The tests that check a snippet read it from the page
a reader copies it from."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def page(path: str) -> str:
    """The text of ``README.md`` or of a page under ``docs/`` (``"going-live/slack.md"``)."""
    target = README if path == "README.md" else DOCS / path
    return target.read_text(encoding="utf-8")


def section(path: str, heading: str) -> str:
    """The section ``## <heading>`` of a page, up to the next ``## `` heading."""
    text = page(path)
    marker = f"\n## {heading}\n"
    assert marker in text, f"no section ## {heading} in {path}"
    return text.split(marker, 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of ``language`` in ``text``, in order."""
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```", text, re.S | re.M)


def block(path: str, heading: str, language: str) -> str:
    """The first ``language`` block of a page's section ``## <heading>``."""
    found = blocks(section(path, heading), language)
    assert found, f"no {language} block under ## {heading} in {path}"
    return found[0]
