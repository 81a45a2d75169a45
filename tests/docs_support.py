"""The README and the documentation pages (``docs/``) as tests read them: a page's
section, and the code blocks in it. The tests that check a snippet read it from the page
a reader copies it from.

Every fenced block of every page is run (or, for configuration, loaded) by a test, or
marked as not run with the reason, on the line just before its fence::

    <!-- not run: installs into your environment -->
    ```bash
    pip install humanwire
    ```

``tests/docs/test_code_blocks.py`` holds the pages to it: which blocks a test uses is
read from the tests' own source (``used_blocks``), so a test names the block it runs with
literal arguments to ``block``, ``blocks(section(...))``, ``blocks(page(...))`` or
``readme_example``.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
TESTS = ROOT / "tests"

NOT_RUN = re.compile(r"^<!-- not run: (.*?) -->$")
"""The marker of a block no test runs, the reason inside it."""

FRAMEWORK_PAGES = {
    "OpenAI Agents SDK": "frameworks/openai-agents.md",
    "Pydantic AI": "frameworks/pydantic-ai.md",
    "Google ADK": "frameworks/google-adk.md",
    "Strands Agents": "frameworks/strands.md",
    "CrewAI": "frameworks/crewai.md",
}
"""The documentation page that opens with the README section's example (under
``## In ten lines``): ``framework_support.readme_example`` checks both are the same."""

_FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass(frozen=True)
class DocBlock:
    """A fenced block of a page, where it is and what its marker says."""

    path: str
    """``README.md`` or the page's path under ``docs/``."""
    line: int
    """The line of its opening fence (from 1)."""
    heading: str | None
    """The ``## `` section it is in; None before the first."""
    language: str
    """The fence's info string (``""`` for a bare fence)."""
    code: str
    not_run: str | None
    """The reason of its ``<!-- not run: ... -->`` marker; None when it has none."""

    @property
    def where(self) -> str:
        return f"{'' if self.path == 'README.md' else 'docs/'}{self.path}:{self.line}"


def page(path: str) -> str:
    """The text of ``README.md`` or of a page under ``docs/`` (``"going-live/slack.md"``)."""
    target = README if path == "README.md" else DOCS / path
    return target.read_text(encoding="utf-8")


def pages() -> list[str]:
    """Every page: the README and each Markdown file under ``docs/``."""
    return ["README.md", *sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))]


def section(path: str, heading: str | None) -> str:
    """The section ``## <heading>`` of a page, up to the next ``## `` heading; ``None``:
    the page's opening, before its first section."""
    text = page(path)
    if heading is None:
        return text.split("\n## ", 1)[0]
    marker = f"\n## {heading}\n"
    assert marker in text, f"no section ## {heading} in {path}"
    return text.split(marker, 1)[1].split("\n## ", 1)[0]


def _fenced(text: str) -> Iterator[tuple[int, str, str, str]]:
    """(line of the opening fence, its language, the code, the line before the fence)."""
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index].rstrip("\n"))
        if opening is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        before = lines[index - 1].strip() if index else ""
        yield index + 1, opening.group(1), "".join(lines[index + 1 : end]), before
        index = end + 1


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of ``language`` in ``text``, in order."""
    return [code for _, found, code, _ in _fenced(text) if found == language]


def block(path: str, heading: str | None, language: str) -> str:
    """The first ``language`` block of a page's section ``## <heading>`` (``None``: the
    opening)."""
    found = blocks(section(path, heading), language)
    assert found, f"no {language} block under ## {heading} in {path}"
    return found[0]


@functools.cache
def page_blocks(path: str) -> tuple[DocBlock, ...]:
    """Every fenced block of a page, in order."""
    found = []
    text = page(path)
    headings = [
        (number, line[3:].rstrip())
        for number, line in enumerate(text.splitlines(), start=1)
        if line.startswith("## ")
    ]
    for fence, language, code, before in _fenced(text):
        heading = next((h for n, h in reversed(headings) if n < fence), None)
        marker = NOT_RUN.match(before)
        reason = marker.group(1).strip() if marker else None
        found.append(DocBlock(path, fence, heading, language, code, reason))
    return tuple(found)


# -- which blocks the tests use ------------------------------------------------------------


def used_blocks(tests: Path = TESTS) -> dict[tuple[str, int], list[str]]:
    """The blocks the tests under ``tests`` read, by (page, line of the fence): the test
    files that read each. Found in their source, in the calls this module offers, with
    literal arguments (a string, or a module-level constant holding one)."""
    used: dict[tuple[str, int], list[str]] = {}
    for source in sorted(tests.rglob("*.py")):
        text = source.read_text(encoding="utf-8")
        if "docs_support" not in text and "readme_example" not in text:
            continue  # reads no block (and parsing every test file takes seconds)
        tree = ast.parse(text)
        constants = _string_constants(tree)
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            for read in _reads(call, constants):
                for found in read.blocks():
                    used.setdefault((read.path, found.line), []).append(
                        str(source.relative_to(tests.parent))
                    )
    return used


class _Read(NamedTuple):
    """What one call reads: the ``language`` blocks of a page's section (``heading``,
    None for the opening) or of the whole page; all of them, or the first."""

    path: str
    heading: str | None
    whole_page: bool
    language: str
    first: bool

    def blocks(self) -> list[DocBlock]:
        chosen = [
            b
            for b in page_blocks(self.path)
            if b.language == self.language and (self.whole_page or b.heading == self.heading)
        ]
        return chosen[:1] if self.first else chosen


def _reads(call: ast.Call, constants: dict[str, str]) -> list[_Read]:
    name = _called(call)

    def literal(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str | type(None)):
            return node.value
        if isinstance(node, ast.Name) and node.id in constants:
            return constants[node.id]
        raise _NotLiteral

    try:
        if name == "readme_example" and len(call.args) == 1:
            heading = literal(call.args[0])
            reads = [_Read("README.md", heading, False, "python", True)]
            if heading in FRAMEWORK_PAGES:
                reads.append(_Read(FRAMEWORK_PAGES[heading], "In ten lines", False, "python", True))
            return reads
        if name == "block" and len(call.args) == 3:
            path, heading, language = (literal(a) for a in call.args)
            assert path is not None and language is not None
            return [_Read(path, heading, False, language, True)]
        if name == "blocks" and len(call.args) == 2 and isinstance(call.args[0], ast.Call):
            inner, language = call.args[0], literal(call.args[1])
            assert language is not None
            if _called(inner) == "section" and len(inner.args) == 2:
                path, heading = (literal(a) for a in inner.args)
                assert path is not None
                return [_Read(path, heading, False, language, False)]
            if _called(inner) == "page" and len(inner.args) == 1:
                path = literal(inner.args[0])
                assert path is not None
                return [_Read(path, None, True, language, False)]
    except _NotLiteral:
        pass
    return []


class _NotLiteral(Exception):
    """An argument whose value the source does not spell out."""


def _called(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _string_constants(tree: ast.Module) -> dict[str, str]:
    constants = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)):
            continue
        if isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = node.value.value
    return constants
