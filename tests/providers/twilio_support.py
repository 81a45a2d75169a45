"""A humanwire service wired to the Twilio contract fake, both on loopback: the service
reaches the fake as it would reach api.twilio.com, the fake calls the service back as
Twilio would (signed), and the test plays the person through the fake."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import pytest

from humanwire import HumanWire
from humanwire.server.config import TwilioConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from humanwire.testing.twilio import FakeTwilio, TwilioFakeServer

SMS_FROM = "+14155550142"
WHATSAPP_FROM = "+14155550143"
POOL = ("+14155550150", "+14155550151")
HUMAN = "+12025550100"
OTHER_HUMAN = "+13125550177"
TEMPLATES = {
    "notification": "HX" + "1" * 32,
    "request": "HX" + "2" * 32,
    "form": "HX" + "3" * 32,
}


@dataclass
class Live:
    fake: FakeTwilio
    runner: ServiceRunner
    client: HumanWire
    key: str

    @property
    def base_url(self) -> str:
        return self.runner.base_url

    def account(self, name: str) -> HumanWire:
        key = self.runner.create_account(name)
        return HumanWire(api_key=key, base_url=self.base_url, max_retries=0)


@pytest.fixture
def fake_twilio() -> Iterator[TwilioFakeServer]:
    fake = FakeTwilio()
    for number in (SMS_FROM, WHATSAPP_FROM, *POOL):
        fake.add_number(number)
    with TwilioFakeServer(fake) as server:
        yield server


def start_live(
    database: str, server: TwilioFakeServer, **changes: Any
) -> tuple[ServiceRunner, str]:
    """The service on ``database`` (a SQLite file or a PostgreSQL URL: the ``database``
    fixture), wired to the fake; again on the same database, a restart."""
    fake = server.fake
    settings: dict[str, Any] = {
        "account_sid": fake.account_sid,
        "auth_token": fake.auth_token,
        "api_base": server.base_url,
        "sms_from": SMS_FROM,
        "whatsapp_from": WHATSAPP_FROM,
        "whatsapp_templates": TEMPLATES,
        "numbers": POOL,
    }
    twilio = TwilioConfig(**{**settings, **changes.pop("twilio", {})})
    config = replace(fast_config(database), twilio=twilio, **changes)
    runner = ServiceRunner(config, "127.0.0.1", 0)
    runner.start()
    # The shared senders' "a message comes in" webhook, as the operator sets it in the
    # console (docs/going-live/twilio.md).
    for number in (SMS_FROM, WHATSAPP_FROM):
        found = fake.number(number)
        assert found is not None
        found.sms_url = f"{runner.base_url}/providers/twilio/messages"
    return runner, runner.create_account("tester")


@contextmanager
def running_live(database: str, server: TwilioFakeServer, **changes: Any) -> Iterator[Live]:
    """``start_live`` with a client of its account, stopped on leaving."""
    runner, key = start_live(database, server, **changes)
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    try:
        yield Live(server.fake, runner, client, key)
    finally:
        client.close()
        runner.stop()


@pytest.fixture
def live(database: str, fake_twilio: TwilioFakeServer) -> Iterator[Live]:
    """The service wired to the fake, on each store in turn."""
    with running_live(database, fake_twilio) as running:
        yield running


def in_background(action: Any) -> Any:
    """Runs ``action`` in a thread (the person's side while the test's request is held);
    returns the thread's join, re-raising what it raised."""
    import threading

    failure: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as exc:  # surfaced by join()
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join(timeout: float = 30.0) -> None:
        thread.join(timeout)
        if failure:
            raise failure[0]

    return join


def reply_when_sent(
    fake: FakeTwilio, to: str, body: str, *, sender: str = SMS_FROM, count: int = 1, **options: Any
) -> Any:
    """Once ``count`` messages reached ``to``, the person answers ``body`` to ``sender``."""

    def act() -> None:
        fake.wait_for(lambda: len(fake.sent_to(to)) >= count, timeout=10)
        fake.send_inbound(to, sender, body, **options)

    return in_background(act)
