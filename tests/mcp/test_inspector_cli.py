"""``humanwire mcp`` over stdio driven by the official MCP Inspector's CLI
(``npx @modelcontextprotocol/inspector --cli``), a client on an earlier protocol revision
than 2026-07-28 (it declares no tasks extension): it lists the tools and calls one,
answered by a scripted human or ended by the wait's no-response text, on the test
service (the embedded sandbox).

The Inspector is an npm package, installed once under ``HUMANWIRE_MCP_INSPECTOR_DIR``
(default ``~/.cache/humanwire-tests/mcp-inspector-<version>``) by ``npm install``
when it is not there (``.ci/run`` installs it the same way before the tests). It is run
with ``npx --no-install`` from there, so a test run never fetches it itself twice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import humanwire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.types.messages import DEFAULT_NO_RESPONSE_TEMPLATE

INSPECTOR = "@modelcontextprotocol/inspector"
VERSION = "0.15.0"
"""The newest release that runs on Node.js 20 (later ones ask for Node.js 22)."""


def inspector_dir() -> Path:
    default = Path.home() / ".cache" / "humanwire-tests" / f"mcp-inspector-{VERSION}"
    return Path(os.environ.get("HUMANWIRE_MCP_INSPECTOR_DIR", default))


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The folder the Inspector is installed in (installed now if it is not)."""
    where = inspector_dir()
    if not (where / "node_modules" / ".bin" / "mcp-inspector").exists():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed for the MCP Inspector (.ci/run installs it)"
        where.mkdir(parents=True, exist_ok=True)
        install = [npm, "install", "--prefix", str(where), "--no-audit", "--no-fund"]
        done = subprocess.run(
            [*install, f"{INSPECTOR}@{VERSION}"],
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return where


def inspect(
    inspector: Path,
    service: RunningService,
    key: str,
    *options: str,
    mcp_args: tuple[str, ...] = (),
) -> Any:
    """``npx @modelcontextprotocol/inspector --cli -e … --method … -- <humanwire mcp>``:
    its JSON answer on stdout."""
    npx = shutil.which("npx")
    assert npx is not None
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("HUMANWIRE_SMS", "HUMANWIRE_WHATSAPP", "HUMANWIRE_SLACK"))
        and name not in ("HUMANWIRE_BASE_URL", "HUMANWIRE_API_KEY")
    }
    # This run's humanwire (a relative PYTHONPATH would not hold from the Inspector's folder).
    env["PYTHONPATH"] = str(Path(humanwire.__file__).resolve().parents[1])
    command = [npx, "--no-install", INSPECTOR, "--cli"]
    command += ["-e", f"HUMANWIRE_BASE_URL={service.base_url}", "-e", f"HUMANWIRE_API_KEY={key}"]
    command += [*options, "--", sys.executable, "-m", "humanwire.cli", "mcp", *mcp_args]
    done = subprocess.run(
        command,
        cwd=inspector,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _text(result: dict[str, Any]) -> str:
    [block] = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


def test_the_inspector_lists_the_tools(
    inspector: Path, humanwire_service: RunningService, humanwire_api_key: str
) -> None:
    listed = inspect(inspector, humanwire_service, humanwire_api_key, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert {"ask_human_sms", "human_form", "call_human", "check_human_interaction"} <= set(tools)
    sms = tools["ask_human_sms"]
    assert "message" in sms["inputSchema"]["properties"]
    assert "message" in sms["inputSchema"].get("required", [])


def test_the_inspector_calls_a_tool_a_person_answers(
    inspector: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    human.reply("Ship it on Friday")
    result = inspect(
        inspector,
        humanwire_service,
        humanwire_api_key,
        # --tool-arg takes every value up to the next option: it comes first.
        *("--tool-arg", "message=Ship v2 this week?"),
        *("--method", "tools/call", "--tool-name", "ask_human_sms"),
        mcp_args=("--wait-time", "30"),
    )
    assert result.get("isError") is not True
    assert _text(result) == "Human response: Ship it on Friday"
    [sent] = human.deliveries(to="+12025550100")
    assert sent.text.startswith("Ship v2 this week?")


def test_the_inspector_reads_the_no_response_text_when_the_wait_ends(
    inspector: Path,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    silent = human.stay_silent()
    result = inspect(
        inspector,
        humanwire_service,
        humanwire_api_key,
        # --tool-arg takes every value up to the next option: it comes first.
        *("--tool-arg", "message=Anyone there?"),
        *("--method", "tools/call", "--tool-name", "ask_human_sms"),
        mcp_args=("--wait-time", "1"),
    )
    assert silent.wait().interaction_id
    assert result.get("isError") is not True
    assert _text(result) == DEFAULT_NO_RESPONSE_TEMPLATE  # the held wait's, as before tasks
