"""Long waits under an MCP client's request limit: progress with the time left, a wait
longer than the client allows handed back with the interaction id (never an error), and
a cancelled request letting go of the wait so the late answer still reaches webhooks."""

from __future__ import annotations

import asyncio
import re

import anyio
from mcp_helpers import Connect, text

from humanwire import HumanWire
from humanwire.mcp.waiting import HEADROOM, plan_wait
from humanwire.testing import ScriptedHuman
from humanwire.testing.receiver import WebhookReceiver


def test_a_wait_is_planned_against_the_client_limit() -> None:
    within = plan_wait(30, None, 60)
    assert (within.held, within.follow_up, within.split) == (30, None, False)
    longer = plan_wait(300, 100, 60)
    assert longer.held == 60 - HEADROOM
    assert longer.follow_up == 300 - (60 - HEADROOM) + 100
    assert longer.split is True
    assert longer.windows() == {"wait_time": 55, "follow_up_time": 345}
    assert plan_wait(600, 60000, 60).follow_up == 60000  # the service's bound
    assert plan_wait(600, None, None).held == 600  # no known limit: hold it all


async def test_progress_carries_the_time_left(connect: Connect, human: ScriptedHuman) -> None:
    human.stay_silent()
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect(wait_time=3, client_timeout=None, progress_interval=0.5) as client:
        result = await client.call_tool(
            "ask_human_sms", {"message": "Still there?"}, progress_callback=on_progress
        )
    assert result.is_error is False
    assert len(seen) >= 4, seen
    assert all(total == 3 for _, total, _ in seen)
    progress = [value for value, _, _ in seen]
    assert progress == sorted(progress) and progress[-1] > progress[0]
    lefts = [int(re.fullmatch(r".*: (\d+) s left\.", str(m)).group(1)) for _, _, m in seen]  # type: ignore[union-attr]
    assert lefts[0] == 3 and lefts[-1] < lefts[0]
    assert str(seen[0][2]).startswith("Waiting for the human's reply by SMS")


async def test_a_wait_longer_than_the_client_allows_comes_back_with_the_id(
    connect: Connect, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    # The client gives up after 6 s: the request holds 1 s, the service listens on.
    async with connect(wait_time=120, client_timeout=6) as client:
        [tool] = [t for t in (await client.list_tools()).tools if t.name == "ask_human_sms"]
        assert "Waits up to 1 seconds" in str(tool.description)
        assert "check_human_interaction returns their answer later" in str(tool.description)
        started = anyio.current_time()
        result = await client.call_tool("ask_human_sms", {"message": "Approve the deploy?"})
        assert anyio.current_time() - started < 6
        delivery = await silent.async_wait()
        assert result.is_error is False
        assert text(result) == (
            f"The human has not answered yet (interaction {delivery.interaction_id}). The "
            "service keeps listening for about 119 more seconds. Continue with other work and "
            "check back later with check_human_interaction (interaction_id "
            f"{delivery.interaction_id}) to get their answer; do not ask again."
        )
        await human.reply("Approved", interaction_id=delivery.interaction_id).async_wait()
        checked = await client.call_tool(
            "check_human_interaction", {"interaction_id": delivery.interaction_id}
        )
    assert text(checked).endswith("was answered. Human response: Approved")


async def test_a_cancelled_request_lets_go_and_the_late_answer_reaches_webhooks(
    connect: Connect,
    human: ScriptedHuman,
    humanwire_client: HumanWire,
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["message.received"])
    silent = human.stay_silent()
    async with connect(wait_time=60, client_timeout=None) as client:
        call = asyncio.ensure_future(client.call_tool("ask_human_sms", {"message": "Ship it?"}))
        delivery = await silent.async_wait()
        call.cancel()  # the SDK client sends notifications/cancelled
        done, _ = await asyncio.wait({call}, timeout=5)
        assert call in done and call.cancelled()
        # The server let go of the held request: the service no longer holds a requester.
        await anyio.sleep(0.5)
        status = humanwire_client.interactions.status(delivery.interaction_id)
        assert status.status == "pending"
        await human.reply("Yes, ship it", interaction_id=delivery.interaction_id).async_wait()
        [event] = await webhook_receiver.async_wait_for("message.received")
        assert event.payload.body == "Yes, ship it"
        assert event.payload.interaction_id == delivery.interaction_id
        # The session is still usable after the cancellation.
        listed = await client.list_tools()
        assert listed.tools
