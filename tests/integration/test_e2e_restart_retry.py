"""A retry after a restart never texts the human twice, over real HTTP.

The service (``ServiceRunner`` on one port and one SQLite file) stops while a send is
held; the client's retry with the same ``Idempotency-Key`` reaches the restarted service,
re-attaches to the interaction the first request created, and gets the human's answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from e2e_support import HUMAN

from humanwire import HumanWire
from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing import fast_config
from humanwire.types import MessageResponse
from pg_support import STORES, store_database

T = TypeVar("T")


class Restartable:
    """The service on one port and one database (a SQLite file or a PostgreSQL URL),
    stopped and started again."""

    def __init__(self, db_path: Path | str) -> None:
        self.config = replace(fast_config(Path("unused.db")), db_path=str(db_path))
        self.runner = ServiceRunner(self.config, "127.0.0.1", 0).start()
        self.port = self.runner.port
        self.base_url = self.runner.base_url

    def restart(self) -> None:
        # stop() gives held requests a short grace, then cancels them and closes the
        # engine: the held send has no stored result when the service comes back.
        self.runner.stop()
        self.runner = ServiceRunner(replace(self.config), "127.0.0.1", self.port).start()

    def wait_held(self, count: int = 1) -> None:
        runner = self.runner
        deadline = time.monotonic() + 10
        while runner.call(lambda: runner.engine.held_waits) < count:
            assert time.monotonic() < deadline, "no request is held"
            time.sleep(0.02)


@pytest.fixture(params=STORES)
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Restartable]:
    """On each store: what a restart keeps (open windows, idempotency links) is in it."""
    with store_database(request.param, tmp_path / "restart.db", "hw_restart") as db:
        restartable = Restartable(db)
        yield restartable
        restartable.runner.stop()


def in_thread(function: Callable[[], T]) -> tuple[threading.Thread, list[T | BaseException]]:
    """Runs the blocking client call beside the test, which plays the operator."""
    outcome: list[T | BaseException] = []

    def target() -> None:
        try:
            outcome.append(function())
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def deliveries(client: HumanWire) -> list[Any]:
    return list(client.sandbox.deliveries(to=HUMAN))


def test_client_retry_across_a_restart_gets_the_reply_of_one_text(service: Restartable) -> None:
    key = service.runner.create_account("restart")
    # Retries fast and often enough to outlast the restart (the service is down ~3 s).
    agent = HumanWire(
        api_key=key,
        base_url=service.base_url,
        max_retries=200,
        retry_initial_delay=0.05,
        retry_max_delay=0.2,
    )
    human = HumanWire(api_key=key, base_url=service.base_url)
    with agent, human:
        thread, outcome = in_thread(
            lambda: agent.messages.sms(to=HUMAN, message="Deploy to prod?", wait_time=60)
        )
        [first] = human.sandbox.deliveries(to=HUMAN, wait=10)
        service.wait_held()
        service.restart()
        service.wait_held()  # the client's retry, re-attached on the new service
        assert len(deliveries(human)) == 1
        human.sandbox.reply(channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="go ahead")
        thread.join(10)
        [result] = outcome
        assert isinstance(result, MessageResponse), result
        assert result.interaction_id == first.interaction_id
        assert (result.status, result.responded) == ("ended", True)
        assert result.response == "Human response: go ahead"
        [only] = deliveries(human)
        assert only.id == first.id


def test_form_retry_with_the_same_key_after_a_restart_gets_the_submission(
    service: Restartable,
) -> None:
    key = service.runner.create_account("forms")
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "form-after-restart"}
    form = {
        "title": "Approve the deploy",
        "fields": [{"id": "ok", "label": "Approve", "type": "checkbox"}],
        "to": HUMAN,
        "waitTime": 60,
    }

    def post_form() -> httpx.Response:
        return httpx.post(f"{service.base_url}/forms/sms", json=form, headers=headers, timeout=70)

    with HumanWire(api_key=key, base_url=service.base_url) as human:
        thread, outcome = in_thread(post_form)
        [first] = human.sandbox.deliveries(to=HUMAN, wait=10)
        assert first.form_url is not None
        service.wait_held()
        service.restart()
        thread.join(10)
        [dropped] = outcome
        # The first request got no answer: the service cut it off (a 5xx or a dropped
        # connection, both of which a client retries).
        if isinstance(dropped, httpx.Response):
            assert dropped.status_code >= 500, dropped.text
        else:
            assert isinstance(dropped, httpx.TransportError), dropped

        thread, outcome = in_thread(post_form)  # the retry, same key and body
        service.wait_held()
        assert len(deliveries(human)) == 1
        submitted = httpx.post(first.form_url, json={"values": {"ok": "true"}}, timeout=10)
        assert submitted.status_code < 300, submitted.text
        thread.join(10)
        [retry] = outcome
        assert isinstance(retry, httpx.Response), retry
        assert retry.status_code == 200, retry.text
        assert retry.json() == {
            "interactionId": first.interaction_id,
            "status": "ended",
            "formUrl": first.form_url,
            "responded": True,
            "values": {"ok": "true"},
            "content": "Approve: Yes",
            "deliveryStatus": "delivered",
        }
        assert len(deliveries(human)) == 1
        # Once answered, the same key replays the stored answer.
        again = post_form()
        assert again.json() == retry.json()
        assert again.headers["idempotent-replayed"] == "true"


def test_a_stop_answers_the_held_send_503_and_the_clients_retry_gets_the_reply(
    service: Restartable,
) -> None:
    """The graceful stop: the held request is answered 503 ``unavailable`` at once (not
    cut off after a grace period), the window stays open, the client's automatic retry
    with the same key re-attaches on the restarted service, and the reply the human sends
    after the restart comes back to the original call; one text is delivered."""
    key = service.runner.create_account("graceful")
    statuses: list[int] = []
    http = httpx.Client(event_hooks={"response": [lambda r: statuses.append(r.status_code)]})
    agent = HumanWire(
        api_key=key,
        base_url=service.base_url,
        http_client=http,
        max_retries=200,
        retry_initial_delay=0.05,
        retry_max_delay=0.2,
    )
    human = HumanWire(api_key=key, base_url=service.base_url)
    with http, agent, human:
        thread, outcome = in_thread(
            lambda: agent.messages.sms(to=HUMAN, message="Ship v2?", wait_time=60)
        )
        [first] = human.sandbox.deliveries(to=HUMAN, wait=10)
        service.wait_held()
        started = time.monotonic()
        service.runner.stop()
        assert time.monotonic() - started < 2.0  # no grace period spent on held requests
        assert statuses == [503]  # the held send was answered, not dropped
        assert not outcome  # and the client is retrying, not failing

        service.runner = ServiceRunner(replace(service.config), "127.0.0.1", service.port).start()
        service.wait_held()  # the retry re-attached to the open interaction
        assert len(deliveries(human)) == 1
        human.sandbox.reply(channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="ship it")
        thread.join(10)
        [result] = outcome
        assert isinstance(result, MessageResponse), result
        assert result.interaction_id == first.interaction_id
        assert (result.responded, result.response) == (True, "Human response: ship it")
        assert statuses[0] == 503 and statuses[-1] == 200
        [only] = deliveries(human)
        assert only.id == first.id


def test_a_multiplexed_wait_survives_a_restart(service: Restartable) -> None:
    """The same through the outcome stream: the wait was answered 202; the stop records a
    503 ``wait.ended`` for it; the client's stream reconnects to the restarted service,
    reads it, retries with the same key (re-attached, 202 again) and gets the reply the
    human sends after the restart; one text is delivered."""
    key = service.runner.create_account("multiplexed")
    agent = HumanWire(
        api_key=key,
        base_url=service.base_url,
        max_retries=200,
        retry_initial_delay=0.05,
        retry_max_delay=0.2,
    )
    agent._driver.multiplex_after = 0  # this one wait goes through the stream
    human = HumanWire(api_key=key, base_url=service.base_url)
    with agent, human:
        thread, outcome = in_thread(
            lambda: agent.messages.sms(to=HUMAN, message="Roll back?", wait_time=60)
        )
        [first] = human.sandbox.deliveries(to=HUMAN, wait=10)
        service.wait_held()
        assert agent._driver.hub is not None
        service.restart()
        service.wait_held()  # the retry, re-attached on the new service
        assert not outcome
        assert len(deliveries(human)) == 1
        human.sandbox.reply(channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="roll back")
        thread.join(20)
        [result] = outcome
        assert isinstance(result, MessageResponse), result
        assert result.interaction_id == first.interaction_id
        assert (result.responded, result.response) == (True, "Human response: roll back")
        assert agent._driver.hub.reconnects >= 1
        [only] = deliveries(human)
        assert only.id == first.id
