"""A workflow asks by SMS; the process running DBOS is killed with SIGKILL mid-wait; the
human answers while no process runs it; the answer bridge (a ``DBOSClient`` on the
system database, in this test's process) sends it in; a new process recovers the
workflow, which completes once, its send step not run again. Then the same with the code
changed between the pause and the answer (a deploy), the application version pinned."""

from __future__ import annotations

import json
import os
import shutil
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOSClient
from dbos_support import LIMIT, AppProcesses, SystemDatabase, until

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman

HUMAN = "+12025550100"
SHIP_APP = Path(__file__).parent / "ship_app.py"
RELEASE_LINE = 'return f"The human said: {answer}"  # RELEASE-LINE'


@pytest.fixture
def humanwire(humanwire_service: RunningService, humanwire_api_key: str) -> Iterator[HumanWire]:
    with HumanWire(base_url=humanwire_service.base_url, api_key=humanwire_api_key) as client:
        yield client


@pytest.mark.parametrize(
    ("deploy", "is_async"),
    [(False, False), (True, False), (False, True)],
    ids=["same-code", "deploy-pinned-version", "async-workflow"],
)
def test_a_workflow_killed_mid_wait_completes_once_after_restart(
    deploy: bool,
    is_async: bool,
    system_database: SystemDatabase,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire: HumanWire,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    path = tmp_path / "ship_app.py"
    shutil.copy(SHIP_APP, path)
    env = {
        **os.environ,
        "HW_BASE_URL": humanwire_service.base_url,
        "HW_API_KEY": humanwire_api_key,
        "DBOS_URL": system_database.url,
        "DBOS_SCHEMA": system_database.schema,
    }
    if deploy:
        env["DBOS_APP_VERSION"] = "ship-2026-12"
    if is_async:
        env["SHIP_ASYNC"] = "1"
    send_step = "humanwire.send_message_async" if is_async else "humanwire.send_message"
    app = AppProcesses(path, env, tmp_path)
    workflow_id = f"ship-{uuid.uuid4()}"
    bridge_cursor = humanwire_dbos.FileCursor(tmp_path / "cursor")
    client: DBOSClient | None = None
    try:
        first = app.run("start", workflow_id)
        assert first.stdout is not None
        assert first.stdout.readline().strip() == "started", app.stderr()
        client = DBOSClient(
            system_database_url=system_database.url, dbos_system_schema=system_database.schema
        )
        bridge = humanwire_dbos.AnswerBridge(humanwire, client, bridge_cursor, poll_wait=1)
        bridge.start_cursor()

        def send_recorded() -> list[dict[str, Any]] | None:
            steps = client.list_workflow_steps(workflow_id) if client else []
            sends = [s for s in steps if s["function_name"] == send_step]
            return sends or None

        (send,) = until(send_recorded, "the send step's record")
        first.send_signal(signal.SIGKILL)
        assert first.wait(LIMIT) == -signal.SIGKILL

        # No process runs the workflow: the human answers, and the bridge sends it in.
        (sent,) = human.deliveries(to=HUMAN)
        assert sent.interaction_id == send["output"]
        human.reply("yes, after the restart", interaction_id=sent.interaction_id).wait(LIMIT)
        until(lambda: bridge.deliver_once(wait=5), "the bridge's delivery")
        assert client.retrieve_workflow(workflow_id).get_status().status == "PENDING"
        if deploy:
            source = path.read_text()
            assert RELEASE_LINE in source
            path.write_text(source.replace(RELEASE_LINE, 'return f"v2: the human said {answer}"'))
        expected = (
            "v2: the human said yes, after the restart"
            if deploy
            else "The human said: yes, after the restart"
        )

        second = app.run("finish", workflow_id)
        out, _ = second.communicate(timeout=LIMIT)
        assert second.returncode == 0, app.stderr()
        finished = json.loads(out.strip().splitlines()[-1])
        assert finished["result"] == expected
        # The recovered workflow sent nothing: no second ask (the POSTs of the process's
        # HumanWire; an async workflow's twin has its own connections, so for it the one
        # delivery below is the proof).
        assert finished["posts"] == []
        assert len(human.deliveries(to=HUMAN)) == 1
        names = [s["function_name"] for s in client.list_workflow_steps(workflow_id)]
        assert names.count(send_step) == 1
        status = client.retrieve_workflow(workflow_id).get_status()
        assert status.status == "SUCCESS"
        if deploy:
            assert status.app_version == "ship-2026-12"
    finally:
        app.close()
        if client is not None:
            client.destroy()
