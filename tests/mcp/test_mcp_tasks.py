"""The tasks extension (MCP 2026-07-28): a waiting tool answers with a task, ``tasks/get``
gives the answer whenever it comes, also from a server built afresh (a restarted
``humanwire mcp``, or the service's ``/mcp``), and clients on earlier revisions keep the
held request."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_helpers import PHONE, text

from humanwire import AsyncHumanWire
from humanwire.mcp import ConfiguredSource, McpSettings, build_server
from humanwire.mcp.tasks import TASKS, CreateTaskResult, GetTaskResult, TaskIdParams
from humanwire.testing import RunningService, ScriptedHuman
from service_process import ServiceProcess


class GetTask(t.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class CancelTask(t.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams


class TaskClient(ClientExtension):
    """A client of the extension: declares it, and resolves a task by polling."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    async def resolve(self, task: CreateTaskResult, ctx: ClaimContext) -> t.CallToolResult:
        while True:
            got = await get_task(ctx.session, task.task_id)
            if got.result is not None:
                return t.CallToolResult.model_validate(got.result)
            await anyio.sleep(0.2)


async def get_task(session: Any, task_id: str) -> GetTaskResult:
    request = GetTask(params=TaskIdParams(task_id=task_id))
    result: GetTaskResult = await session.send_request(request, GetTaskResult)
    return result


@asynccontextmanager
async def modern(
    client: AsyncHumanWire, *, tasks: bool = True, **settings: Any
) -> AsyncIterator[Client]:
    """A 2026-07-28 client (in process) on a server built afresh for ``client``'s account."""
    chosen = McpSettings(**{"sms_to": PHONE, **settings})
    source = ConfiguredSource(chosen, client)
    server = build_server(chosen, source, source.channels)
    async with Client(server, extensions=[TaskClient()] if tasks else []) as mcp_client:
        yield mcp_client


async def test_a_wait_is_a_task_and_tasks_get_gives_the_answer(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    async with modern(async_humanwire_client, wait_time=300) as client:
        assert client.session.protocol_version == "2026-07-28"
        started = anyio.current_time()
        task = await client.session.call_tool(
            "ask_human_sms", {"message": "Ship v2?"}, allow_claimed=True
        )
        assert anyio.current_time() - started < 5
        assert isinstance(task, CreateTaskResult)
        assert task.status == "working"
        assert task.status_message is not None
        assert f"Waiting for a reply from {PHONE} by SMS until 20" in task.status_message
        delivery = await silent.async_wait()
        # The service listens for the whole wait after the send (nothing is held).
        got = await get_task(client.session, task.task_id)
        assert (got.status, got.result) == ("working", None)
        assert got.status_message == task.status_message
        await human.reply("Yes, ship it", interaction_id=delivery.interaction_id).async_wait()
        done = await get_task(client.session, task.task_id)
    assert done.status == "completed"
    assert done.result is not None
    assert text(t.CallToolResult.model_validate(done.result)).endswith(
        "was answered. Human response: Yes, ship it"
    )


async def test_a_task_outlives_the_server_that_started_it(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    async with modern(async_humanwire_client, wait_time=300) as first:
        task = await first.session.call_tool(
            "human_form", {"title": "Budget", "fields": [{"label": "Amount"}]}, allow_claimed=True
        )
    assert isinstance(task, CreateTaskResult)
    delivery = await silent.async_wait()
    await human.fill_form({"amount": "1200"}, interaction_id=delivery.interaction_id).async_wait()
    # A new server, source and client: nothing of the first is left.
    fresh = AsyncHumanWire(
        api_key=async_humanwire_client.api_key, base_url=async_humanwire_client.base_url
    )
    async with fresh, modern(fresh) as second:
        done = await get_task(second.session, task.task_id)
    assert done.status == "completed"
    assert done.result is not None
    assert "the human submitted the form:\namount: 1200" in text(
        t.CallToolResult.model_validate(done.result)
    )


async def test_a_task_outlives_a_restart_of_the_service(tmp_path: Path) -> None:
    """The service (a ``humanwire serve`` process on a SQLite file) is SIGKILLed and
    started again on that file between the task's creation and the human's answer; the
    same ``humanwire mcp`` server and client then read the answer with ``tasks/get``."""
    key = f"hw_tasks_{uuid.uuid4().hex}"
    service = ServiceProcess(tmp_path / "humanwire.db", key, tmp_path / "home", tmp_path / "log")
    await asyncio.to_thread(service.start)
    try:
        async with (
            AsyncHumanWire(api_key=key, base_url=service.base_url) as humanwire,
            modern(humanwire, wait_time=300) as client,
        ):
            task = await client.session.call_tool(
                "ask_human_sms", {"message": "Still shipping?"}, allow_claimed=True
            )
            assert isinstance(task, CreateTaskResult)
            with ScriptedHuman(service.base_url, key) as human:
                (sent,) = human.deliveries(to=PHONE)
            service.kill()
            # While it is down: an error saying so, never an internal error.
            with pytest.raises(MCPError) as down:
                await get_task(client.session, task.task_id)
            assert down.value.message.startswith("humanwire: ")
            assert "The task is kept: call tasks/get again" in down.value.message
            await asyncio.to_thread(service.start)
            # The task is still the service's, waiting as before the kill.
            got = await get_task(client.session, task.task_id)
            assert (got.status, got.result) == ("working", None)
            assert got.status_message == task.status_message
            with ScriptedHuman(service.base_url, key) as human:
                reply = human.reply("Yes, after the restart", interaction_id=sent.interaction_id)
                await reply.async_wait()
            done = await get_task(client.session, task.task_id)
    finally:
        service.kill()
    assert done.status == "completed"
    assert done.result is not None
    assert text(t.CallToolResult.model_validate(done.result)).endswith(
        "was answered. Human response: Yes, after the restart"
    )


async def test_no_answer_in_the_window_completes_with_the_no_response_text(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.stay_silent()
    async with modern(async_humanwire_client, wait_time=1) as client:
        result = await client.call_tool("ask_human_sms", {"message": "Anyone?"})
    assert result.is_error is False
    assert text(result).endswith("ended without a response from the human.")


async def test_a_client_that_resolves_tasks_reads_the_answer_as_a_tool_result(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.reply("On my way")
    async with modern(async_humanwire_client) as client:
        result = await client.call_tool("ask_human_sms", {"message": "Coming?"})
    assert text(result).endswith("was answered. Human response: On my way")


async def test_without_the_extension_the_wait_is_held_as_before(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.reply("Held")
    async with modern(async_humanwire_client, tasks=False) as client:
        assert client.session.protocol_version == "2026-07-28"
        result = await client.call_tool("ask_human_sms", {"message": "Still?"})
    assert text(result) == "Human response: Held"


async def test_a_legacy_client_gets_progress_and_the_held_answer(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.reply("Legacy")
    chosen = McpSettings(sms_to=PHONE, progress_interval=0.2)
    source = ConfiguredSource(chosen, async_humanwire_client)
    server = build_server(chosen, source, source.channels)
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with Client(server, mode="legacy", extensions=[TaskClient()]) as client:
        result = await client.call_tool(
            "ask_human_sms", {"message": "Old?"}, progress_callback=on_progress
        )
    assert text(result) == "Human response: Legacy"
    assert seen and "s left" in str(seen[0])


async def test_tasks_over_the_services_mcp_endpoint(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    url = f"{humanwire_service.base_url}/mcp"
    headers = {"Authorization": f"Bearer {humanwire_api_key}"}

    @asynccontextmanager
    async def connect() -> AsyncIterator[Client]:
        transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
        async with Client(transport, extensions=[TaskClient()]) as client:
            yield client

    async with connect() as first:
        assert first.session.protocol_version == "2026-07-28"
        task = await first.session.call_tool(
            "ask_human_sms", {"message": "Over HTTP?"}, allow_claimed=True
        )
    assert isinstance(task, CreateTaskResult)
    delivery = await silent.async_wait()
    await human.reply("Yes", interaction_id=delivery.interaction_id).async_wait()
    async with connect() as second:
        done = await get_task(second.session, task.task_id)
    assert done.status == "completed"
    assert done.result is not None
    assert text(t.CallToolResult.model_validate(done.result)).endswith("Human response: Yes")


async def test_tasks_cancel_ends_the_interaction(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    async with modern(async_humanwire_client, wait_time=300) as client:
        task = await client.session.call_tool(
            "ask_human_sms", {"message": "Still needed?"}, allow_claimed=True
        )
        assert isinstance(task, CreateTaskResult)
        delivery = await silent.async_wait()
        request = CancelTask(params=TaskIdParams(task_id=task.task_id))
        cancelled = await client.session.send_request(request, GetTaskResult)
        assert cancelled.status == "cancelled"
        status = await async_humanwire_client.interactions.status(delivery.interaction_id)
        assert status.ended and status.result is None
        # A reply after the cancel is no answer to it.
        await human.reply("Too late", interaction_id=delivery.interaction_id).async_wait()
        after = await get_task(client.session, task.task_id)
    assert after.status == "completed"
    assert after.result is not None
    assert text(t.CallToolResult.model_validate(after.result)).endswith(
        "ended without a response from the human."
    )


async def test_another_accounts_key_cannot_read_the_task(
    humanwire_service: RunningService, humanwire_api_key: str, human: ScriptedHuman
) -> None:
    human.stay_silent()
    url = f"{humanwire_service.base_url}/mcp"

    @asynccontextmanager
    async def connect(key: str) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {key}"}
        transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
        async with Client(transport, extensions=[TaskClient()]) as client:
            yield client

    async with connect(humanwire_api_key) as mine:
        task = await mine.session.call_tool(
            "ask_human_sms", {"message": "Mine?"}, allow_claimed=True
        )
    assert isinstance(task, CreateTaskResult)
    async with connect(humanwire_service.create_account("other")) as theirs:
        with pytest.raises(MCPError, match="unknown task"):
            await get_task(theirs.session, task.task_id)


async def test_an_approval_request_is_a_task_read_back_with_its_decision(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    decided = human.decide_approval("approve", "go ahead", to=PHONE)
    action = {"action_name": "refund", "action_arguments": {"order": "1042"}}
    async with modern(async_humanwire_client, wait_time=300) as client:
        task = await client.session.call_tool(
            "request_approval", {"title": "Refund order 1042", **action}, allow_claimed=True
        )
        assert isinstance(task, CreateTaskResult)
        assert f"approval by {PHONE} (sms)" in str(task.status_message)
        await decided.async_wait()
        done = await get_task(client.session, task.task_id)
    assert done.status == "completed"
    assert done.result is not None
    assert text(t.CallToolResult.model_validate(done.result)).startswith("Approved")


async def test_a_call_is_a_task_until_the_call_ends(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    human.answer_call("They will come at noon", delay=0.5)
    async with modern(async_humanwire_client) as client:
        task = await client.session.call_tool(
            "call_human", {"prompt": "Ask when they come"}, allow_claimed=True
        )
        assert isinstance(task, CreateTaskResult)
        assert task.status_message == f"Waiting for the call with {PHONE} to end."
        result = await TaskClient().resolve(task, _claim_context(client))
    assert text(result).endswith("the call ended. Summary: They will come at noon")


def _claim_context(client: Client) -> ClaimContext:
    return ClaimContext(session=client.session, tool_name="call_human", read_timeout_seconds=None)
