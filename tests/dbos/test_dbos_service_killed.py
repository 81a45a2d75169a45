"""The humanwire service SIGKILLed mid-wait under a DBOS workflow and started again on
its database at the same address (a real ``humanwire serve`` process): once while the
answer bridge holds its long-poll, once right after the human answered while no bridge
ran. The service runs on the store DBOS's system database runs on (a SQLite file beside
DBOS's, or a PostgreSQL schema of its own beside DBOS's schema), as one team would deploy
both. The workflow gets the answer once (a second ``recv`` on its topic finds nothing),
its send step ran once, and the human got one text."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbos import DBOS
from dbos_support import SystemDatabase
from dbos_workflows import HUMAN, ask_twice_on_one_topic

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire
from humanwire.testing import ScriptedHuman
from pg_support import store_database, stored_bytes
from service_process import ServiceProcess

pytestmark = pytest.mark.timeout(900)
LIMIT = 90.0


@pytest.fixture
def service(system_database: SystemDatabase, tmp_path: Path) -> Iterator[ServiceProcess]:
    key = f"hw_killed_{uuid.uuid4().hex}"
    with store_database(system_database.kind, tmp_path / "service.db", "hw_killed") as db:
        process = ServiceProcess(db, key, tmp_path / "home", tmp_path / "log")
        process.start()
        try:
            yield process
        finally:
            process.kill()


def _restart(service: ServiceProcess) -> None:
    service.kill()
    service.start()


def test_the_humanwire_service_killed_mid_wait_loses_no_answer_and_applies_it_once(
    service: ServiceProcess, system_database: SystemDatabase, tmp_path: Path
) -> None:
    with HumanWire(base_url=service.base_url, api_key=service.api_key) as humanwire:
        humanwire_dbos.configure(humanwire)
        DBOS(config=system_database.config("humanwire-dbos-service-kill"))  # type: ignore[arg-type]
        DBOS.launch()
        cursor = humanwire_dbos.FileCursor(tmp_path / "cursor")
        bridge = humanwire_dbos.AnswerBridge(humanwire, DBOS, cursor, poll_wait=1, retry_delay=0.5)
        try:
            bridge.start()
            handle = DBOS.start_workflow(ask_twice_on_one_topic, 600.0)
            with ScriptedHuman(service.base_url, service.api_key) as human:
                sent = _one(human)
            # 1. Killed while the bridge holds its long-poll; the bridge retries.
            _restart(service)
            # 2. No bridge runs; the human answers; the service is killed at once.
            bridge.stop(LIMIT)
            before = tmp_path / "cursor-before"
            shutil.copy(cursor.path, before)
            with ScriptedHuman(service.base_url, service.api_key) as human:
                human.reply("yes, then it died", interaction_id=sent).wait(LIMIT)
            _restart(service)
            bridge.start()
            answer, again = handle.get_result()
            assert answer == "yes, then it died"
            assert again is None  # no second message on the workflow's topic
            names = [s["function_name"] for s in DBOS.list_workflow_steps(handle.workflow_id)]
            assert names.count("humanwire.send_message") == 1
            with ScriptedHuman(service.base_url, service.api_key) as human:
                assert len(human.deliveries(to=HUMAN)) == 1
            page = humanwire.interactions.events(
                after=humanwire_dbos.FileCursor(before).load(),
                wait=0,
                event_type="interaction.ended",
            )
            assert [e.interaction_id for e in page.events] == [sent]
            assert b"yes, then it died" in stored_bytes(str(service.database))
        finally:
            bridge.stop(LIMIT)
            DBOS.destroy()


def _one(human: ScriptedHuman) -> str:
    """The interaction id of the one text sent to the human, once the step sent it."""
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        sent = human.deliveries(to=HUMAN)
        if sent:
            (only,) = sent
            return only.interaction_id or ""
        time.sleep(0.2)
    raise AssertionError("the workflow sent nothing")
