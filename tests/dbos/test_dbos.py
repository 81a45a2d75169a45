"""humanwire.dbos against real DBOS (a SQLite file and PostgreSQL) and the real humanwire
service over loopback, with the testing kit's scripted human."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from dbos import DBOS, SetWorkflowID
from dbos_support import SystemDatabase
from dbos_workflows import (
    HUMAN,
    ask_once,
    ask_twice_on_one_topic,
    form_then_call,
    gated_deploy,
    undecided_approval,
)

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire
from humanwire.errors import AlreadyConsumedError
from humanwire.testing import RunningService, ScriptedHuman

LIMIT = 90.0
"""Seconds any one wait of these tests may take on a slow, loaded machine."""


@pytest.fixture
def humanwire(humanwire_service: RunningService, humanwire_api_key: str) -> Iterator[HumanWire]:
    with HumanWire(base_url=humanwire_service.base_url, api_key=humanwire_api_key) as client:
        yield client


@pytest.fixture
def dbos(system_database: SystemDatabase, humanwire: HumanWire) -> Iterator[None]:
    """DBOS launched in this process on the test's system database, the steps sending
    with the test's account."""
    humanwire_dbos.configure(humanwire)
    DBOS(config=system_database.config("humanwire-dbos-test"))  # type: ignore[arg-type]
    DBOS.launch()
    try:
        yield
    finally:
        DBOS.destroy()


@pytest.fixture
def bridge(
    dbos: None, humanwire: HumanWire, tmp_path: Path
) -> Iterator[humanwire_dbos.AnswerBridge]:
    """The answer bridge beside the workflows (``DBOS`` as the sender), following the
    feed from before the test's first send."""
    answer_bridge = humanwire_dbos.AnswerBridge(
        humanwire, DBOS, humanwire_dbos.FileCursor(tmp_path / "cursor"), poll_wait=1
    )
    answer_bridge.start()
    yield answer_bridge
    answer_bridge.stop(LIMIT)


def test_a_workflow_asks_by_sms_and_gets_the_reply_once(
    bridge: humanwire_dbos.AnswerBridge, human: ScriptedHuman
) -> None:
    replied = human.reply("yes, ship it")
    handle = DBOS.start_workflow(ask_twice_on_one_topic, 120.0)
    delivered = replied.wait(LIMIT)
    assert delivered.text == "Ship v2 tonight?"
    answer, again = handle.get_result()
    assert answer == "yes, ship it"
    assert again is None  # no second message on the topic


def test_a_redelivered_answer_is_dropped_by_its_idempotency_key(
    dbos: None, humanwire: HumanWire, human: ScriptedHuman, tmp_path: Path
) -> None:
    answer_bridge = humanwire_dbos.AnswerBridge(
        humanwire, DBOS, humanwire_dbos.FileCursor(tmp_path / "cursor"), poll_wait=1
    )
    before = answer_bridge.start_cursor()
    replied = human.reply("yes, ship it")  # scripted before the send: it acts on the next
    handle = DBOS.start_workflow(ask_twice_on_one_topic, 120.0)
    replied.wait(LIMIT)
    deadline = time.monotonic() + LIMIT
    while answer_bridge.deliver_once(wait=5) == 0:
        assert time.monotonic() < deadline, "gave up waiting for the bridge's delivery"
    # The crash between the send and the cursor's save: the same event comes again.
    answer_bridge.cursor.save(before)
    assert answer_bridge.deliver_once(wait=5) == 1
    answer, again = handle.get_result()
    assert answer == "yes, ship it"
    assert again is None


def test_silence_ends_in_the_no_response_text(
    bridge: humanwire_dbos.AnswerBridge, humanwire: HumanWire, human: ScriptedHuman
) -> None:
    handle = DBOS.start_workflow(ask_once, 2.0)
    assert handle.get_result() == "Human did not respond. Continue where you left off."
    assert handle.get_result() == humanwire_dbos.NO_RESPONSE
    (sent,) = human.deliveries(to=HUMAN)
    # The send names the workflow that waits (the bridge finds it by this).
    status = humanwire.interactions.status(sent.interaction_id)
    assert status.metadata == {humanwire_dbos.WORKFLOW_ID_KEY: handle.workflow_id}


def test_a_form_and_a_call_come_back_into_the_workflow(
    bridge: humanwire_dbos.AnswerBridge, human: ScriptedHuman
) -> None:
    human.fill_form({"note": "all green"})
    human.answer_call("They said v2 may ship after 6 pm.")
    values, summary = DBOS.start_workflow(form_then_call).get_result()
    assert values == {"note": "all green"}
    assert summary == "They said v2 may ship after 6 pm."


def test_an_approval_with_a_quorum_of_two_is_consumed_once(
    bridge: humanwire_dbos.AnswerBridge, humanwire: HumanWire, human: ScriptedHuman
) -> None:
    human.decide_approval("approve", to=HUMAN)
    human.decide_approval("approve", to="+12025550101")
    workflow_id = f"deploy-{uuid.uuid4()}"
    with SetWorkflowID(workflow_id):
        decision, consumed, text = DBOS.start_workflow(gated_deploy, 2).get_result()
    assert (decision, consumed) == ("approved", True)
    assert "2 of 2" in text
    # The workflow started again under its id returns what it recorded: no second claim.
    with SetWorkflowID(workflow_id):
        assert DBOS.start_workflow(gated_deploy, 2).get_result() == (decision, True, text)
    (step,) = [
        s
        for s in DBOS.list_workflow_steps(workflow_id)
        if s["function_name"] == "humanwire.consume_approval"
    ]
    # Another claim of the same approval (not the step's key) is refused.
    approvals = [d for d in human.deliveries(to=HUMAN) if d.interaction_id]
    with pytest.raises(AlreadyConsumedError):
        humanwire.approvals.consume(
            approvals[0].interaction_id or "",
            action_digest=humanwire.approvals.get(approvals[0].interaction_id or "").action_digest,
        )
    assert step["output"] is True


GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "dbos.md"


@pytest.mark.parametrize("example", ["ship_workflow.py", "dbos_ship_runner.py"])
def test_the_guide_shows_the_tested_code(example: str) -> None:
    source = (Path(__file__).parent / example).read_text()
    body = source.split("\n", 1)[1]  # past the comment naming the page
    assert body in GUIDE.read_text()


def test_the_guide_runs_against_the_embedded_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dbos_ship_runner

    monkeypatch.chdir(tmp_path)  # the runner keeps its database and cursor there
    assert dbos_ship_runner.main() == "The human said: yes, ship it"
    assert (tmp_path / "humanwire-dbos.cursor").read_text()
    assert (tmp_path / "ship.sqlite").exists()


class LosesTheFirstAnswer(httpx.BaseTransport):
    """Forwards every request to the service, but drops the answer to the first send:
    the send happened, the step never hears of it (as when a process dies right then)."""

    def __init__(self, path_ends: str = "/messages/sms") -> None:
        self.inner = httpx.HTTPTransport()
        self.path_ends = path_ends
        self.sends: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and request.url.path.endswith(self.path_ends):
            self.sends.append(request.headers.get("Idempotency-Key"))
            if len(self.sends) == 1:
                response.read()
                response.close()
                raise httpx.ReadError("the answer was lost", request=request)
        return response


def test_a_send_step_run_again_sends_once(
    system_database: SystemDatabase,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    human: ScriptedHuman,
) -> None:
    transport = LosesTheFirstAnswer()
    with HumanWire(
        base_url=humanwire_service.base_url,
        api_key=humanwire_api_key,
        max_retries=0,  # the step's own retry runs it again, not the client's
        http_client=httpx.Client(transport=transport),
    ) as lossy:
        humanwire_dbos.configure(lossy)
        DBOS(config=system_database.config("humanwire-dbos-test"))  # type: ignore[arg-type]
        DBOS.launch()
        try:
            handle = DBOS.start_workflow(ask_once, 2.0)
            assert handle.get_result() == humanwire_dbos.NO_RESPONSE
            steps = DBOS.list_workflow_steps(handle.workflow_id)
        finally:
            DBOS.destroy()
    first, again = transport.sends
    assert first == again == f"dbos:{handle.workflow_id}:1"
    (sent,) = human.deliveries(to=HUMAN)
    (send,) = [s for s in steps if s["function_name"] == "humanwire.send_message"]
    assert send["output"] == sent.interaction_id


def test_a_consume_step_run_again_claims_once(
    system_database: SystemDatabase,
    humanwire_service: RunningService,
    humanwire_api_key: str,
    humanwire: HumanWire,
    human: ScriptedHuman,
    tmp_path: Path,
) -> None:
    transport = LosesTheFirstAnswer("/consume")
    human.decide_approval("approve", to=HUMAN)
    human.decide_approval("approve", to="+12025550101")
    with HumanWire(
        base_url=humanwire_service.base_url,
        api_key=humanwire_api_key,
        max_retries=0,
        http_client=httpx.Client(transport=transport),
    ) as lossy:
        humanwire_dbos.configure(lossy)
        DBOS(config=system_database.config("humanwire-dbos-test"))  # type: ignore[arg-type]
        DBOS.launch()
        bridge = humanwire_dbos.AnswerBridge(
            humanwire, DBOS, humanwire_dbos.FileCursor(tmp_path / "cursor"), poll_wait=1
        )
        bridge.start()
        try:
            handle = DBOS.start_workflow(gated_deploy, 2)
            decision, consumed, _ = handle.get_result()
            (claim,) = [
                s
                for s in DBOS.list_workflow_steps(handle.workflow_id)
                if s["function_name"] == "humanwire.consume_approval"
            ]
        finally:
            bridge.stop(LIMIT)
            DBOS.destroy()
    # The first claim went through but its answer was lost; the step ran again under the
    # same key and was answered as the first claim was, not with already_consumed.
    assert (decision, consumed) == ("approved", True)
    first, again = transport.sends
    assert first == again == f"dbos:{handle.workflow_id}:{claim['function_id']}"


@pytest.mark.parametrize(
    ("on_timeout", "decision"), [("reject", "rejected"), ("approve", "approved"), ("none", None)]
)
def test_an_undecided_approval_ends_as_on_timeout_says(
    bridge: humanwire_dbos.AnswerBridge, on_timeout: str, decision: str | None
) -> None:
    # The service's decision at the end of its window arrives within the wait's grace.
    got, timed_out, text = DBOS.start_workflow(undecided_approval, on_timeout).get_result()
    assert (got, timed_out) == (decision, True)
    assert text.startswith("No decision in time")
