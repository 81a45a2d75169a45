"""The MCP page (docs/start/mcp.md): its JSON snippets are the files under ``docs/mcp/``,
and each one, used as written, gives a client the working tools."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp_helpers import text

from docs_support import blocks, page
from humanwire.testing import RunningService, ScriptedHuman

ROOT = Path(__file__).resolve().parents[2]
DESKTOP = ROOT / "docs" / "mcp" / "claude_desktop_config.json"
REMOTE = ROOT / "docs" / "mcp" / "remote_config.json"


def test_the_page_shows_the_tested_files() -> None:
    assert blocks(page("start/mcp.md"), "json") == [
        DESKTOP.read_text(encoding="utf-8"),
        REMOTE.read_text(encoding="utf-8"),
    ]


def _server(path: Path) -> dict[str, Any]:
    config = json.loads(path.read_text(encoding="utf-8"))
    server: dict[str, Any] = config["mcpServers"]["humanwire"]
    return server


async def test_the_desktop_config_runs_on_the_embedded_service(tmp_path: Path) -> None:
    server = _server(DESKTOP)
    # The command as the client would run it: the console script of this environment.
    command = Path(sys.executable).parent / server["command"]
    assert command.exists(), "pip install -e . installs the humanwire command"
    env = {key: value for key, value in os.environ.items() if not key.startswith("HUMANWIRE_")}
    # A private home, and any free port: no service of the developer's is touched.
    env |= {"HUMANWIRE_HOME": str(tmp_path), "HUMANWIRE_EMBEDDED_PORT": "0", **server["env"]}
    params = StdioServerParameters(command=str(command), args=server["args"], env=env)
    async with Client(params) as client:
        sent = await client.call_tool("notify_human_sms", {"message": "Hello from MCP"})
        assert sent.is_error is False, text(sent)
        # The embedded service started in the server's process, on the home given.
        state = json.loads((tmp_path / "embedded.json").read_text(encoding="utf-8"))
        human = ScriptedHuman(state["base_url"], state["api_key"])
        try:
            human.reply("Hi from the inbox", to=server["env"]["HUMANWIRE_SMS_TO"])
            result = await client.call_tool("ask_human_sms", {"message": "Anyone there?"})
        finally:
            human.close()
    assert text(result) == "Human response: Hi from the inbox"


async def test_the_remote_config_reaches_the_running_service(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    server = _server(REMOTE)
    url = str(server["url"]).replace("http://127.0.0.1:8765", humanwire_service.base_url)
    headers = {
        name: value.replace("<HUMANWIRE_API_KEY>", humanwire_api_key)
        for name, value in server["headers"].items()
    }
    reply = human.reply("Reached me", to=headers["Humanwire-Sms-To"])
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with Client(transport) as client:
        result = await client.call_tool("ask_human_sms", {"message": "Is this you?"})
    assert text(result) == "Human response: Reached me"
    assert (await reply.async_wait()).to == headers["Humanwire-Sms-To"]


@pytest.mark.parametrize("path", [DESKTOP, REMOTE])
def test_the_snippets_are_valid_json(path: Path) -> None:
    assert "humanwire" in json.loads(path.read_text(encoding="utf-8"))["mcpServers"]
