"""Fixtures of the Temporal tests: the real dev server (binary from the dev extra), a
client of the test's account on the session's service, and the answer bridge."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporal_support import binary
from temporalio.testing import WorkflowEnvironment

from humanwire import AsyncHumanWire
from humanwire.temporal import AnswerBridge, FileCursor
from humanwire.testing import RunningService


@pytest.fixture
async def humanwire(
    humanwire_service: RunningService, humanwire_api_key: str
) -> AsyncIterator[AsyncHumanWire]:
    async with AsyncHumanWire(
        base_url=humanwire_service.base_url, api_key=humanwire_api_key
    ) as client:
        yield client


@pytest.fixture
async def dev_server() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=binary("temporal"), ui=False, dev_server_log_level="error"
    )
    async with env:
        yield env


@pytest.fixture
async def bridge(
    humanwire: AsyncHumanWire, dev_server: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[AnswerBridge]:
    """The answer bridge, following the feed from before the test's first send."""
    answer_bridge = AnswerBridge(
        humanwire, dev_server.client, FileCursor(tmp_path / "cursor"), poll_wait=1
    )
    await answer_bridge.start_cursor()
    task = asyncio.create_task(answer_bridge.run())
    yield answer_bridge
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
