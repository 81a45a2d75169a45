"""``humanwire mcp`` as a real subprocess, driven by the MCP SDK's stdio client."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

from mcp import StdioServerParameters
from mcp.client import Client
from mcp_helpers import text

from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver


def command_env(**extra: str) -> dict[str, str]:
    """The subprocess's environment: this one (PATH, HUMANWIRE_HOME of the test run)
    without recipients or a service, plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HUMANWIRE_SMS", "HUMANWIRE_WHATSAPP", "HUMANWIRE_SLACK"))
        and key not in ("HUMANWIRE_BASE_URL", "HUMANWIRE_API_KEY")
    }
    return {**env, **extra}


def server_params(service: RunningService, key: str, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "humanwire.cli", "mcp", *args],
        env=command_env(HUMANWIRE_BASE_URL=service.base_url, HUMANWIRE_API_KEY=key),
    )


async def test_ask_over_stdio(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    human.reply("Friday works", channel="slack")
    params = server_params(humanwire_service, humanwire_api_key, "--wait-time", "20")
    progress: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ask_human_sms", "ask_human_slack", "human_form", "call_human"} <= names
        result = await client.call_tool(
            "ask_human_slack", {"message": "Is Friday ok?"}, progress_callback=on_progress
        )
    assert result.is_error is False
    assert text(result) == "Human response: Friday works"
    assert progress and "s left" in str(progress[0])


async def test_cancel_over_stdio_lets_go_of_the_wait(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["message.received"])
    silent = human.stay_silent()
    params = server_params(humanwire_service, humanwire_api_key, "--client-timeout", "0")
    async with Client(params) as client:
        call = asyncio.ensure_future(client.call_tool("ask_human_sms", {"message": "Merge?"}))
        delivery = await silent.async_wait()
        call.cancel()
        await asyncio.wait({call}, timeout=5)
        assert call.cancelled()
        await asyncio.sleep(0.5)  # the notification crosses the pipe
        await human.reply("Merged it", interaction_id=delivery.interaction_id).async_wait()
        [event] = await webhook_receiver.async_wait_for("message.received")
    assert event.payload.body == "Merged it"


def test_without_a_recipient_the_command_says_what_to_set() -> None:
    env = command_env(HUMANWIRE_BASE_URL="https://humanwire.example", HUMANWIRE_API_KEY="k")
    done = subprocess.run(
        [sys.executable, "-m", "humanwire.cli", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "HUMANWIRE_SMS_TO" in done.stderr
    assert done.stdout == ""  # stdout carries the protocol only


SHOP = '''
from pathlib import Path

LEDGER = Path(__file__).with_name("ledger.txt")


def refund(order: str, amount: int) -> str:
    """Refund an order."""
    with LEDGER.open("a") as runs:
        runs.write(f"{order} {amount}\\n")
    return f"refunded {amount} on order {order}"
'''


async def test_a_gated_function_of_your_own_runs_once_approved(
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
    tmp_path: Any,
) -> None:
    (tmp_path / "shop.py").write_text(SHOP)
    phone = "+14155550177"
    params = server_params(
        humanwire_service, humanwire_api_key, "--to", phone, "--gate", "shop:refund"
    )
    assert params.env is not None
    params.env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), params.env.get("PYTHONPATH", "")])
    human.decide_approval("approve", to=phone, delay=0.3)
    async with Client(params) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "refund" in listed and listed["refund"].description == "Refund an order."
        result = await client.call_tool("refund", {"order": "1042", "amount": 30})
    assert text(result) == "refunded 30 on order 1042"
    assert (tmp_path / "ledger.txt").read_text() == "1042 30\n"


def test_a_gate_that_names_no_function_exits_2_saying_so() -> None:
    env = command_env(HUMANWIRE_BASE_URL="https://humanwire.example", HUMANWIRE_API_KEY="k")
    for spec, said in [
        ("refund", "is not module:function"),
        ("no_such_module_hw:refund", "cannot import no_such_module_hw"),
        ("json:no_such_function", "json has no function no_such_function"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "humanwire.cli", "mcp", "--to", "+14155550177", "--gate", spec],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2, done.stderr
        assert said in done.stderr
        assert done.stdout == ""
