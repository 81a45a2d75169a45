"""``/mcp`` on the running service: streamable HTTP, the account's bearer key, driven by
the MCP SDK's own HTTP client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from mcp.client import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp_helpers import OTHER_PHONE, text

from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def http_client(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with Client(transport) as client:
        yield client


def test_without_the_key_401_in_the_service_error_shape(
    humanwire_service: RunningService,
) -> None:
    url = f"{humanwire_service.base_url}/mcp"
    missing = httpx.post(url, json=INITIALIZE, headers=ACCEPT)
    wrong = httpx.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer nope"})
    for response in (missing, wrong):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in missing.json()["error"]["message"]
    assert httpx.get(url).status_code == 401


async def test_ask_over_streamable_http(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    human.reply("On my way")
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    headers = {"Authorization": f"Bearer {humanwire_api_key}"}
    async with http_client(f"{humanwire_service.base_url}/mcp", headers) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ask_human_sms", "ask_human_whatsapp", "ask_human_slack"} <= tools
        result = await client.call_tool(
            "ask_human_sms", {"message": "Are you coming?"}, progress_callback=on_progress
        )
    assert result.is_error is False
    assert text(result) == "Human response: On my way"
    assert progress and "s left" in str(progress[0])


async def test_recipient_from_the_client_configuration(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    reply = human.reply("Right number", to=OTHER_PHONE)
    headers = {"Authorization": f"Bearer {humanwire_api_key}", "Humanwire-Sms-To": OTHER_PHONE}
    async with http_client(f"{humanwire_service.base_url}/mcp", headers) as client:
        result = await client.call_tool("ask_human_sms", {"message": "Who is this?"})
    assert text(result) == "Human response: Right number"
    assert (await reply.async_wait()).to == OTHER_PHONE


async def test_each_account_sees_its_own_interactions(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    mine = {"Authorization": f"Bearer {humanwire_api_key}"}
    other = {"Authorization": f"Bearer {humanwire_service.create_account('other')}"}
    async with http_client(f"{humanwire_service.base_url}/mcp", mine) as client:
        await client.call_tool("notify_human_sms", {"message": "Heads-up"})
    interaction_id = (await silent.async_wait()).interaction_id
    async with http_client(f"{humanwire_service.base_url}/mcp", other) as client:
        result = await client.call_tool(
            "check_human_interaction", {"interaction_id": interaction_id}
        )
    assert result.is_error is True
    assert "not_found" in text(result)


async def test_cancel_over_http_lets_go_of_the_wait(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    from humanwire import HumanWire

    with HumanWire(api_key=humanwire_api_key, base_url=humanwire_service.base_url) as hw:
        webhook_receiver.register(hw, event_types=["message.received"])
    silent = human.stay_silent()
    headers = {"Authorization": f"Bearer {humanwire_api_key}"}
    async with http_client(f"{humanwire_service.base_url}/mcp", headers) as client:
        call = asyncio.ensure_future(client.call_tool("ask_human_sms", {"message": "Go?"}))
        delivery = await silent.async_wait()
        call.cancel()
        await asyncio.wait({call}, timeout=5)
        assert call.cancelled()
        await asyncio.sleep(0.5)
        await human.reply("Go", interaction_id=delivery.interaction_id).async_wait()
        [event] = await webhook_receiver.async_wait_for("message.received")
    assert event.payload.body == "Go"


def test_a_session_belongs_to_the_account_that_opened_it(
    humanwire_service: RunningService, humanwire_api_key: str
) -> None:
    url = f"{humanwire_service.base_url}/mcp"
    mine = {**ACCEPT, "Authorization": f"Bearer {humanwire_api_key}"}
    other_key = humanwire_service.create_account("someone else")
    opened = httpx.post(url, json=INITIALIZE, headers=mine)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    theirs = {**ACCEPT, "Authorization": f"Bearer {other_key}", "Mcp-Session-Id": session}
    refused = httpx.post(url, json=listing, headers=theirs)
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "not_found"
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    own = {**mine, "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
    assert httpx.post(url, json=initialized, headers=own).status_code == 202
    listed = httpx.post(url, json=listing, headers=own)
    assert listed.status_code == 200
    assert "ask_human_sms" in listed.text
