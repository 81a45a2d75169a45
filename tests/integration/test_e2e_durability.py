"""A restart loses nothing: the webhook outbox, open windows, form links, accounts and
stored idempotent results live in the SQLite file; a new service on it carries on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from e2e_support import HUMAN

from humanwire import HumanWire
from humanwire.server.config import SHARED_SMS_NUMBER, ServiceConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing import WebhookReceiver, fast_config
from humanwire.types import FormReceivedEvent, MessageReceivedEvent
from pg_support import STORES, store_database


class Restartable:
    """The service on one port and one database (a SQLite file or a PostgreSQL URL),
    stopped and started again."""

    def __init__(self, db_path: Path | str) -> None:
        # Slow enough retries that a failed delivery is still queued when we stop.
        config = replace(fast_config(Path("unused.db")), db_path=str(db_path))
        self.config = replace(config, webhook_retry_base=0.5)
        self.runner = ServiceRunner(self.config, "127.0.0.1", 0).start()
        self.port = self.runner.port

    @property
    def base_url(self) -> str:
        return self.runner.base_url

    def restart(self) -> None:
        self.runner.stop()
        config: ServiceConfig = replace(self.config)
        self.runner = ServiceRunner(config, "127.0.0.1", self.port).start()

    def stop(self) -> None:
        self.runner.stop()


@pytest.fixture(params=STORES)
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Restartable]:
    """On each store: the outbox and open windows a restart finds are in it."""
    with store_database(request.param, tmp_path / "durable.db", "hw_durable") as db:
        restartable = Restartable(db)
        yield restartable
        restartable.stop()


def test_queued_webhook_deliveries_survive_a_restart(
    service: Restartable, webhook_receiver: WebhookReceiver
) -> None:
    key = service.runner.create_account("outbox")
    with HumanWire(api_key=key, base_url=service.base_url) as client:
        webhook_receiver.register(client, ["message.received"])
        webhook_receiver.set_status(503)
        client.sandbox.reply(channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="queued")
        deadline = time.monotonic() + 10
        while not webhook_receiver.deliveries:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    service.runner.stop()
    failed = len(webhook_receiver.deliveries)
    assert failed >= 1 and not webhook_receiver.events
    webhook_receiver.set_status(200)
    service.restart()
    [event] = webhook_receiver.wait_for("message.received")
    assert isinstance(event, MessageReceivedEvent)
    assert event.payload.body == "queued"
    assert len(webhook_receiver.deliveries) > failed


def test_open_windows_forms_accounts_and_idempotency_survive_a_restart(
    service: Restartable, webhook_receiver: WebhookReceiver
) -> None:
    key = service.runner.create_account("windows")
    with HumanWire(api_key=key, base_url=service.base_url) as client:
        webhook_receiver.register(client, ["message.received", "form.received"])
        listening = client.messages.sms(
            message="Tell me later", to=HUMAN, follow_up_time=60, idempotency_key="once"
        )
        short = client.messages.sms(message="Quick one", to="+12025550111", follow_up_time=1)
        form = client.forms.sms(
            to=HUMAN,
            title="Later",
            fields=[{"id": "note", "label": "Note", "type": "text"}],
            follow_up_time=60,
        )
        assert listening.status == short.status == form.status == "pending"
        assert form.form_url is not None

    service.runner.stop()
    time.sleep(1.2)  # the short window closes while the service is down
    service.restart()

    with HumanWire(api_key=key, base_url=service.base_url) as client:  # the same key works
        assert client.interactions.wait(short.interaction_id, timeout=5).status == "ended"
        assert client.interactions.status(listening.interaction_id).status == "pending"
        replayed = client.messages.sms(
            message="Tell me later", to=HUMAN, follow_up_time=60, idempotency_key="once"
        )
        assert replayed.interaction_id == listening.interaction_id
        assert len(client.sandbox.deliveries(to=HUMAN, channel="sms")) == 2  # message + form

        client.sandbox.reply(channel="sms", from_=HUMAN, to=SHARED_SMS_NUMBER, body="now then")
        [reply] = webhook_receiver.wait_for("message.received")
        assert reply.payload.interaction_id == listening.interaction_id
        assert client.interactions.status(listening.interaction_id).status == "ended"

        submitted = httpx.post(form.form_url, json={"values": {"note": "after restart"}})
        assert submitted.status_code == 200, submitted.text
        [filled] = webhook_receiver.wait_for("form.received")
        assert isinstance(filled, FormReceivedEvent)
        assert filled.payload.values == {"note": "after restart"}
