"""The documentation site (mkdocs.yml, docs/) and the README: the site builds with
``mkdocs build --strict`` (every link and anchor found, every page in the navigation,
every docstring rendered); the HTTP API page is the one rendered from the service's
``/openapi.json``; the reference covers every public module; every code block parses;
the README stays a short front page."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from docs_support import DOCS, NOT_RUN, README, ROOT, blocks

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PAGES = sorted([README, *DOCS.rglob("*.md")])


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    assert mkdocs.exists(), 'pip install -e ".[dev]" installs mkdocs (the "docs" extra)'
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # The reference is rendered from the docstrings, not left as a directive.
    client = (tmp_path / "site" / "reference" / "client" / "index.html").read_text("utf-8")
    assert 'id="humanwire.HumanWire"' in client and ":::" not in client


def _http_api_script() -> ModuleType:
    path = ROOT / "scripts" / "http_api_reference.py"
    spec = importlib.util.spec_from_file_location("http_api_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_http_api_page_is_rendered_from_the_services_document() -> None:
    script = _http_api_script()
    document = script.fetch_document()
    shown = (DOCS / "reference" / "http-api.md").read_text(encoding="utf-8")
    assert shown == script.render(document), (
        "docs/reference/http-api.md is stale: python scripts/http_api_reference.py --write"
    )
    for path, methods in document["paths"].items():
        for method in methods:
            assert f"### `{method.upper()} {path}`" in shown


def _public_modules() -> list[str]:
    """Every module of ``src/humanwire`` with no private part in its name; of
    ``humanwire.server``, the package alone (its public face is listed by hand on the
    service's page); of ``humanwire.cli``, the package alone (a module per command group,
    whose reference is the command's ``--help``)."""
    names = []
    for path in (ROOT / "src" / "humanwire").rglob("*.py"):
        parts = list(path.relative_to(ROOT / "src").with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(part.startswith("_") for part in parts):
            continue
        if parts[:2] in (["humanwire", "server"], ["humanwire", "cli"]) and len(parts) > 2:
            continue
        names.append(".".join(parts))
    return sorted(names)


def test_the_reference_covers_every_public_module() -> None:
    documented = set()
    for page in (DOCS / "reference").glob("*.md"):
        documented |= set(re.findall(r"^::: (\S+)$", page.read_text("utf-8"), re.M))
    missing = [name for name in _public_modules() if name not in documented]
    assert not missing, f"add to a page of docs/reference: {missing}"
    assert {"humanwire.server.runtime.runner", "humanwire.server.config"} <= documented


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_parses(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for code in blocks(text, "python"):
        # Top-level ``await`` as in a notebook or an async function's body.
        compile(code, str(page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    for code in blocks(text, "json"):
        try:
            json.loads(code)
        except json.JSONDecodeError:
            # Log lines: one JSON object a line.
            for line in code.splitlines():
                json.loads(line)
    for code in blocks(text, "toml"):
        tomllib.loads(code)


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    # Lines a reader sees: the not-run markers are HTML comments.
    assert len([line for line in text.splitlines() if not NOT_RUN.match(line)]) <= 200
    # Its links lead to files that exist (the site's own links are checked by the build).
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+:", target):
            assert (ROOT / target).exists(), target


def test_the_readmes_table_has_a_row_for_every_framework() -> None:
    # Every package of humanwire installed by an extra of its name is a framework's or an
    # engine's adapter: the front page's table names its extra.
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    packages = [
        p.name for p in (ROOT / "src" / "humanwire").iterdir() if (p / "__init__.py").exists()
    ]
    adapters = sorted(name for name in packages if name.replace("_", "-") in extras)
    assert len(adapters) >= 13, adapters
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Every framework") :].split("\n\n")[1]
    installs = [row.split("|")[2] for row in table.splitlines()[2:]]
    named = {extra for cell in installs for extra in re.findall(r"`([a-z-]+)`", cell)}
    assert {name.replace("_", "-") for name in adapters} <= named, sorted(named)


def test_no_file_cites_a_document_outside_the_repository() -> None:
    outside = re.compile(r"DESIGN\.md|PROVIDERS\.md|FRAMEWORKS\.md|\.\./shared|/work/shared")
    cited = []
    for folder in ("src", "tests", "docs", "benchmarks", "scripts", "notebooks"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in {".py", ".md", ".toml", ".ipynb", ".sh", ""}:
                continue
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            cited += [f"{path.relative_to(ROOT)}" for _ in outside.finditer(text)]
    # This file names them to look for them.
    assert [name for name in cited if not name.endswith("test_docs_site.py")] == []
