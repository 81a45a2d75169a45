"""Every fenced block of the README and of ``docs/`` is used by a test as written (run,
or, for a configuration, loaded), or says why not: ``<!-- not run: <reason> -->`` on the
line before its fence (tests/docs_support.py). A block with neither is one a reader may
copy and find broken."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_support import DocBlock, page_blocks, pages, used_blocks

USED = used_blocks()


@pytest.mark.parametrize("path", pages())
def test_every_block_is_used_by_a_test_or_says_why_not(path: str) -> None:
    unused, marked_but_used, no_reason = [], [], []
    for found in page_blocks(path):
        users = USED.get((found.path, found.line))
        if found.not_run is None and not users:
            unused.append(_shown(found))
        elif found.not_run is not None and users:
            marked_but_used.append(f"{found.where} (used by {', '.join(sorted(set(users)))})")
        elif found.not_run == "":
            no_reason.append(found.where)
    assert not unused, (
        "blocks no test uses: run each from a test (tests/docs_support.py), or put "
        "<!-- not run: <reason> --> on the line before its fence:\n" + "\n".join(unused)
    )
    assert not marked_but_used, "marked not run, yet a test uses them:\n" + "\n".join(
        marked_but_used
    )
    assert not no_reason, "a not-run marker without its reason: " + ", ".join(no_reason)


def _shown(found: DocBlock) -> str:
    first = found.code.splitlines()[0] if found.code.strip() else ""
    return f"  {found.where} ```{found.language} under ## {found.heading}: {first[:60]}"


def test_the_scan_finds_the_ways_a_test_names_a_block(tmp_path: Path) -> None:
    (tmp_path / "test_reads.py").write_text(
        "from docs_support import block, blocks, page, section\n"
        "PAGE = 'guides/webhooks.md'\n"
        "def test_it():\n"
        "    blocks(section(PAGE, None), 'python')\n"
        "    block('start/quickstart.md', 'Ask a person from Python', 'python')\n"
        "    blocks(page('going-live/twilio.md'), 'toml')\n"
        "    readme_example('CrewAI')\n"
        "    block(some_path, 'Ask a person from Python', 'python')\n",
        encoding="utf-8",
    )
    used = {(path, line) for path, line in used_blocks(tmp_path)}

    def lines(path: str, language: str, *section: str | None) -> set[int]:
        """The lines of the page's ``language`` blocks (in the one ``section`` given)."""
        return {
            b.line
            for b in page_blocks(path)
            if b.language == language and (not section or b.heading == section[0])
        }

    webhooks = {("guides/webhooks.md", n) for n in lines("guides/webhooks.md", "python", None)}
    assert len(webhooks) == 2 and webhooks <= used
    # block(): the first of the section only.
    quickstart = sorted(lines("start/quickstart.md", "python", "Ask a person from Python"))
    assert ("start/quickstart.md", quickstart[0]) in used
    assert ("start/quickstart.md", quickstart[1]) not in used
    assert {("going-live/twilio.md", n) for n in lines("going-live/twilio.md", "toml")} <= used
    # The README's example and its framework page's copy.
    assert ("README.md", min(lines("README.md", "python", "CrewAI"))) in used
    crewai = min(lines("frameworks/crewai.md", "python", "In ten lines"))
    assert ("frameworks/crewai.md", crewai) in used
    assert len(used) == 2 + 1 + len(lines("going-live/twilio.md", "toml")) + 2
