"""Gated tools (``build_server(..., gated=[...])``) against the real service, the approver
deciding on the approval page: on MCP 2026-07-28 the call's approval is an input-required
result whose signed state continues it (in a server built afresh too), and the function
runs once on approval, never on rejection, never twice; earlier revisions hold the call
with progress."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp_helpers import PHONE, text

from humanwire import AsyncHumanWire
from humanwire.mcp import ConfiguredSource, GatedTool, McpSettings, build_server
from humanwire.mcp.gate import APPROVAL_INPUT, GATE, ApprovalState, _Continuation, arguments_digest
from humanwire.testing import ScriptedHuman

KEY = "k" * 40
"""The state key the servers of a test share (as ``HUMANWIRE_MCP_STATE_KEY`` would)."""
REFUND = {"order": "1042", "amount": 30}


class Ledger:
    """The gated action: a refund, recorded each time it runs."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, int]] = []

    def refund(self, order: str, amount: int) -> str:
        """Refund an order."""
        self.runs.append((order, amount))
        return f"refunded {amount} on order {order}"


def _server(client: AsyncHumanWire, ledger: Ledger, key: str = KEY, **settings: Any) -> Any:
    chosen = McpSettings(**{"sms_to": PHONE, "state_key": key, **settings})
    source = ConfiguredSource(chosen, client)
    return build_server(chosen, source, source.channels, gated=[GatedTool(ledger.refund)])


@asynccontextmanager
async def modern(
    client: AsyncHumanWire,
    ledger: Ledger,
    *,
    elicitation: Any = None,
    key: str = KEY,
    **settings: Any,
) -> AsyncIterator[Client]:
    """A 2026-07-28 client on a server built afresh for ``client``'s account."""
    server = _server(client, ledger, key, **settings)
    async with Client(server, elicitation_callback=elicitation) as mcp_client:
        assert mcp_client.session.protocol_version == "2026-07-28"
        yield mcp_client


async def _accept(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={})


async def test_listed_with_the_functions_schema(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    async with modern(async_humanwire_client, Ledger()) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        capabilities = client.session.server_capabilities
    assert tools["refund"].description == "Refund an order."
    assert set(tools["refund"].input_schema["required"]) == {"order", "amount"}
    assert capabilities is not None and capabilities.extensions is not None
    assert capabilities.extensions[GATE] == {"tools": ["refund"]}


async def test_approved_it_runs_once_after_an_input_required_round(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger, asked = Ledger(), []
    decided = human.decide_approval("approve", "fine", to=PHONE)

    async def elicitation(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        asked.append(params.message)
        await decided.async_wait()  # the person at the client waits for the approver
        return t.ElicitResult(action="accept", content={})

    async with modern(async_humanwire_client, ledger, elicitation=elicitation) as client:
        result = await client.call_tool("refund", REFUND)
    assert result.is_error is False
    assert text(result) == "refunded 30 on order 1042"
    assert ledger.runs == [("1042", 30)]
    [message] = asked
    assert f"refund waits for approval by {PHONE} (sms) until 20" in message
    delivery = decided.wait()
    approval = await async_humanwire_client.approvals.get(delivery.interaction_id)
    assert approval.decision == "approved"
    with pytest.raises(Exception, match="already"):  # consumed: by the run
        await async_humanwire_client.approvals.consume(
            delivery.interaction_id, action_digest=approval.action_digest
        )


async def test_rejected_it_never_runs_and_the_model_reads_why(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger = Ledger()
    human.decide_approval("reject", "not this order", to=PHONE)
    async with modern(async_humanwire_client, ledger, elicitation=_accept) as client:
        result = await client.call_tool("refund", REFUND)
    assert result.is_error is True
    assert text(result) == "Not run: rejected by a human (not this order); nothing ran."
    assert ledger.runs == []


async def test_continued_by_another_server_runs_once_and_never_again(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger = Ledger()
    silent = human.stay_silent(to=PHONE)
    async with modern(async_humanwire_client, ledger, elicitation=_accept) as first:
        pending = await first.session.call_tool("refund", REFUND, allow_input_required=True)
    assert isinstance(pending, t.InputRequiredResult)
    assert pending.input_requests is not None and set(pending.input_requests) == {APPROVAL_INPUT}
    state = pending.request_state
    assert state is not None
    delivery = await silent.async_wait()
    await human.decide_approval(
        "approve", interaction_id=delivery.interaction_id, to=PHONE
    ).async_wait()
    answers = {APPROVAL_INPUT: t.ElicitResult(action="accept", content={})}
    outcomes = []
    for _ in range(2):  # a restarted server, and the same continuation once more
        fresh = AsyncHumanWire(
            api_key=async_humanwire_client.api_key, base_url=async_humanwire_client.base_url
        )
        async with fresh, modern(fresh, ledger, elicitation=_accept) as again:
            outcomes.append(
                await again.session.call_tool(
                    "refund",
                    REFUND,
                    allow_input_required=True,
                    input_responses=answers,
                    request_state=state,
                )
            )
    assert [text(result) for result in outcomes] == [
        "refunded 30 on order 1042",
        "Not run: this approval was used already: the action ran before.",
    ]
    assert ledger.runs == [("1042", 30)]


async def test_a_state_for_other_arguments_or_another_key_is_refused(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger = Ledger()
    silent = human.stay_silent(to=PHONE)
    async with modern(async_humanwire_client, ledger, elicitation=_accept) as client:
        pending = await client.session.call_tool("refund", REFUND, allow_input_required=True)
        assert isinstance(pending, t.InputRequiredResult)
        delivery = await silent.async_wait()
        await human.decide_approval(
            "approve", interaction_id=delivery.interaction_id, to=PHONE
        ).async_wait()
        for arguments, state in (
            ({"order": "1042", "amount": 3000}, pending.request_state),  # other arguments
            (REFUND, str(pending.request_state)[:-4] + "AAAA"),  # tampered
            (REFUND, "hwa1.e30.AAAA"),  # unsigned, as a client could write it
        ):
            with pytest.raises(MCPError, match="requestState"):
                await client.session.call_tool(
                    "refund", arguments, allow_input_required=True, request_state=state
                )
    other_key = "o" * 40
    async with modern(async_humanwire_client, ledger, key=other_key) as other:
        with pytest.raises(MCPError, match="requestState"):
            await other.session.call_tool(
                "refund", REFUND, allow_input_required=True, request_state=pending.request_state
            )
    assert ledger.runs == []


def test_the_signed_state_binds_the_approval_the_tool_and_the_arguments() -> None:
    state = ApprovalState(KEY.encode())
    continuation = _Continuation("int_1", "refund", arguments_digest(REFUND), 2e9)
    signed = state.sign(continuation)
    assert state.verify(signed, "refund", dict(reversed(list(REFUND.items())))) == continuation
    with pytest.raises(MCPError, match="another tool call"):
        state.verify(signed, "refund", {**REFUND, "amount": 31})
    with pytest.raises(MCPError, match="another tool call"):
        state.verify(signed, "pay", REFUND)
    with pytest.raises(MCPError, match="invalid approval state"):
        ApprovalState(b"o" * 40).verify(signed, "refund", REFUND)
    _payload, _, mac = signed.partition(".")[2].partition(".")
    forged = ApprovalState(KEY.encode()).sign(_Continuation("int_2", "refund", "x", 2e9))
    swapped = f"hwa1.{forged.split('.')[1]}.{mac}"
    with pytest.raises(MCPError, match="invalid approval state"):
        state.verify(swapped, "refund", REFUND)


async def test_declined_at_the_client_it_never_runs_and_the_approval_is_closed(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger = Ledger()
    silent = human.stay_silent(to=PHONE)

    async def decline(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        return t.ElicitResult(action="decline")

    async with modern(async_humanwire_client, ledger, elicitation=decline) as client:
        result = await client.call_tool("refund", REFUND)
    assert text(result) == "Not run: withdrawn at the client before a decision; nothing ran."
    delivery = await silent.async_wait()
    status = await async_humanwire_client.interactions.status(delivery.interaction_id)
    assert status.ended
    assert ledger.runs == []


async def test_without_elicitation_the_state_alone_carries_the_wait(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger = Ledger()
    decided = human.decide_approval("approve", to=PHONE, delay=0.5)
    async with modern(async_humanwire_client, ledger) as client:
        pending = await client.session.call_tool("refund", REFUND, allow_input_required=True)
        assert isinstance(pending, t.InputRequiredResult)
        assert pending.input_requests is None
        # Continued before the decision: the wait holds, then the function runs.
        result = await client.session.call_tool(
            "refund", REFUND, allow_input_required=True, request_state=pending.request_state
        )
    await decided.async_wait()
    assert isinstance(result, t.CallToolResult)
    assert text(result) == "refunded 30 on order 1042"
    assert ledger.runs == [("1042", 30)]


async def test_a_legacy_client_holds_the_call_with_progress(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger, seen = Ledger(), []
    human.decide_approval("approve", to=PHONE, delay=0.5)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    server = _server(async_humanwire_client, ledger, progress_interval=0.2)
    async with Client(server, mode="legacy") as client:
        assert client.session.protocol_version != "2026-07-28"
        result = await client.call_tool("refund", REFUND, progress_callback=on_progress)
    assert text(result) == "refunded 30 on order 1042"
    assert ledger.runs == [("1042", 30)]
    assert seen and "approval decision" in str(seen[0])


async def test_a_legacy_client_undecided_in_time_runs_nothing(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger = Ledger()
    human.stay_silent(to=PHONE)
    server = _server(async_humanwire_client, ledger, wait_time=1)
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("refund", REFUND)
    assert result.is_error is True
    assert text(result) == "Not run: rejected by default (no decision in time); nothing ran."
    assert ledger.runs == []


_CONTINUE_IN_A_NEW_PROCESS = """
import asyncio, json, sys
import mcp_types as t
from mcp.client import Client
from humanwire import AsyncHumanWire
from humanwire.mcp import ConfiguredSource, McpSettings, build_server

base_url, api_key, state, ledger, phone, key, arguments = sys.argv[1:8]

def refund(order: str, amount: int) -> str:
    '''Refund an order.'''
    with open(ledger, "a") as runs:
        runs.write(f"{order} {amount}\\n")
    return f"refunded {amount} on order {order}"

async def main() -> None:
    async with AsyncHumanWire(api_key=api_key, base_url=base_url) as client:
        settings = McpSettings(sms_to=phone, state_key=key)
        source = ConfiguredSource(settings, client)
        server = build_server(settings, source, source.channels, gated=[refund])
        async with Client(server) as mcp:
            result = await mcp.session.call_tool(
                "refund", json.loads(arguments), allow_input_required=True, request_state=state
            )
    print(json.dumps({"text": result.content[0].text, "error": result.is_error}))

asyncio.run(main())
"""


async def test_continued_twice_in_new_processes_it_runs_once(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    silent = human.stay_silent(to=PHONE)
    async with modern(async_humanwire_client, Ledger(), elicitation=_accept) as first:
        pending = await first.session.call_tool("refund", REFUND, allow_input_required=True)
    assert isinstance(pending, t.InputRequiredResult) and pending.request_state
    delivery = await silent.async_wait()
    await human.decide_approval(
        "approve", interaction_id=delivery.interaction_id, to=PHONE
    ).async_wait()
    client = async_humanwire_client
    argv = [client.base_url, client.api_key, pending.request_state, str(ledger)]
    argv += [PHONE, KEY, json.dumps(REFUND)]

    def continue_in_a_new_process() -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", _CONTINUE_IN_A_NEW_PROCESS, *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    outcomes = [await asyncio.to_thread(continue_in_a_new_process) for _ in range(2)]
    assert outcomes == [
        {"text": "refunded 30 on order 1042", "error": False},
        {"text": "Not run: this approval was used already: the action ran before.", "error": True},
    ]
    assert ledger.read_text() == "1042 30\n"


async def test_arguments_the_function_refuses_ask_no_one(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    ledger = Ledger()
    async with modern(async_humanwire_client, ledger, elicitation=_accept) as client:
        result = await client.call_tool("refund", {"order": "1042", "amount": "thirty"})
    assert result.is_error is True
    assert text(result).startswith("humanwire: invalid arguments: amount: ")
    page = await async_humanwire_client.approvals.list()
    assert page.approvals == []
    assert ledger.runs == []


async def test_a_client_with_the_tasks_extension_gets_the_input_required_result(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    from test_mcp_tasks import TaskClient

    ledger = Ledger()
    human.decide_approval("approve", to=PHONE, delay=0.3)
    server = _server(async_humanwire_client, ledger)
    async with Client(server, extensions=[TaskClient()], elicitation_callback=_accept) as client:
        result = await client.call_tool("refund", REFUND)
    assert text(result) == "refunded 30 on order 1042"
    assert ledger.runs == [("1042", 30)]
