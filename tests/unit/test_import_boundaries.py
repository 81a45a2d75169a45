"""The package boundaries hold (docs/explanation/architecture.md, "Package boundaries"):
``lint-imports`` checks the contracts in ``.importlinter`` against the import graph of
``src/humanwire``, imports inside functions and under TYPE_CHECKING included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists(), 'pip install -e ".[dev]" installs import-linter'
    # This checkout's source, whatever the environment's install points at.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert ", 0 broken." in done.stdout, done.stdout


def _contract(name: str) -> dict[str, list[str]]:
    import configparser

    parser = configparser.ConfigParser(inline_comment_prefixes=(";",))
    parser.read(ROOT / ".importlinter")
    section = parser[f"importlinter:contract:{name}"]
    return {key: section[key].split() for key in section}


def test_the_client_is_every_module_but_the_forbidden_ones() -> None:
    """The client contract takes the whole package (``humanwire.*``), so a new module is
    checked as it lands; the imports it ignores are exactly those the forbidden modules
    make (which may import anything), nothing of the client's."""
    client = _contract("client")
    assert client["source_modules"] == ["humanwire.*"]
    forbidden = [m for m in client["forbidden_modules"] if m.startswith("humanwire.")]
    expected = {f"{m} -> **" for m in forbidden} | {
        f"{m}.** -> **" for m in forbidden if (ROOT / "src" / Path(*m.split("."))).is_dir()
    }
    ignored = client["ignore_imports"]
    lines = {" ".join(ignored[k : k + 3]) for k in range(0, len(ignored), 3)}
    assert lines == expected


def _server_import_cycles() -> list[list[str]]:
    """The strongly connected parts of ``humanwire.server``'s import graph (imports in
    functions and under TYPE_CHECKING included), each of more than one module."""
    import grimp

    graph = grimp.build_graph("humanwire", cache_dir=None)
    modules = {m for m in graph.modules if m.startswith("humanwire.server")}
    edges = {
        m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i in modules)
        for m in modules
    }
    # Tarjan's algorithm, iterative (the graph is deeper than the default recursion).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[list[str]] = []
    for start in sorted(modules):
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    parts.append(sorted(part))
    return parts


def test_no_import_cycle_in_the_server_is_longer_than_two_modules() -> None:
    """A module and its helper may import each other (a provider and its routes); a
    longer loop means no layer of it can be read, tested or replaced alone."""
    import humanwire

    assert Path(humanwire.__file__).resolve().is_relative_to(ROOT / "src")  # this checkout
    cycles = _server_import_cycles()
    assert [cycle for cycle in cycles if len(cycle) > 2] == []


def test_the_slack_fake_grants_the_scopes_the_service_asks_for() -> None:
    # The fake writes Slack's side out instead of importing the implementation's list:
    # here the two are compared, not made equal by construction.
    from humanwire.server.delivery.slack import BOT_SCOPES
    from humanwire.testing.slack import DEFAULT_SCOPES

    assert set(DEFAULT_SCOPES) == set(BOT_SCOPES)


def _private_names_across_the_server_boundary() -> list[str]:
    """``from X import _name`` where one side is ``humanwire.server`` and the other not:
    import-linter sees modules, not the names taken from them."""
    import ast

    src = ROOT / "src"
    found = []
    for path in (src / "humanwire").rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[:-1]  # a module's package; an __init__'s is its own
        module = ".".join(parts if parts[-1] != "__init__" else parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if not target.startswith("humanwire"):
                continue
            in_server = module.startswith("humanwire.server")
            if in_server == target.startswith("humanwire.server"):
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            private = [name for name in private if not name.startswith("__")]
            found += [f"{module} imports {target}.{name}" for name in private]
    return found


def test_no_private_name_crosses_the_server_boundary() -> None:
    assert _private_names_across_the_server_boundary() == []


@pytest.mark.parametrize(
    "module",
    ["humanwire.server.http.errors", "humanwire.server.http.middleware", "humanwire.cli"],
)
def test_a_module_the_command_line_reaches_first_imports_on_its_own(module: str) -> None:
    # The command line reaches the HTTP side's errors before its middleware (the Slack
    # routes' error answers): an import of one that needed the other half-initialized
    # failed there only.
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
