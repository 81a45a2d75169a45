"""A humanwire service wired to the Telnyx contract fake, both on loopback (and, for the
two-carrier tests, to the Twilio fake too): the service reaches the fakes as it would
reach api.telnyx.com / api.twilio.com, the fakes call it back signed, and the test plays
the person through them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from humanwire import HumanWire
from humanwire.server.config import TelnyxConfig, TwilioConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from humanwire.testing.telnyx import FakeTelnyx, TelnyxFakeServer
from humanwire.testing.twilio import TwilioFakeServer

TELNYX_FROM = "+13125550142"
TELNYX_POOL = ("+13125550150", "+13125550151")
HUMAN = "+12025550100"
OTHER_HUMAN = "+13125550177"


@dataclass
class TelnyxLive:
    fake: FakeTelnyx
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
def fake_telnyx() -> Iterator[TelnyxFakeServer]:
    fake = FakeTelnyx()
    for number in (TELNYX_FROM, *TELNYX_POOL):
        fake.add_number(number)
    with TelnyxFakeServer(fake) as server:
        yield server


def telnyx_config(server: TelnyxFakeServer, **changes: Any) -> TelnyxConfig:
    fake = server.fake
    settings: dict[str, Any] = {
        "api_key": fake.api_key,
        "public_key": fake.public_key,
        "api_base": server.api_base,
        "sms_from": TELNYX_FROM,
        "messaging_profile_id": fake.messaging_profile_id,
        "connection_id": fake.connection_id,
        "account_sid": fake.account_sid,
        "numbers": TELNYX_POOL,
    }
    return TelnyxConfig(**{**settings, **changes})


def start_telnyx(
    database: str,
    server: TelnyxFakeServer,
    *,
    telnyx: dict[str, Any] | None = None,
    twilio: TwilioConfig | None = None,
    **changes: Any,
) -> tuple[ServiceRunner, str]:
    """The service on ``database`` wired to the Telnyx fake (and to Twilio when
    ``twilio`` is given); again on the same database, a restart."""
    config = replace(
        fast_config(database),
        telnyx=telnyx_config(server, **(telnyx or {})),
        twilio=twilio,
        **changes,
    )
    runner = ServiceRunner(config, "127.0.0.1", 0)
    runner.start()
    # What the operator sets in the portal (docs/going-live/telnyx.md).
    server.fake.messaging_webhook_url = f"{runner.base_url}/providers/telnyx/messages"
    server.fake.voice_url = f"{runner.base_url}/providers/telnyx/voice"
    server.fake.status_callback = f"{runner.base_url}/providers/telnyx/call-status"
    return runner, runner.create_account("tester")


@pytest.fixture
def telnyx_live(database: str, fake_telnyx: TelnyxFakeServer) -> Iterator[TelnyxLive]:
    """The service wired to the Telnyx fake alone, on each store in turn."""
    runner, key = start_telnyx(database, fake_telnyx)
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    try:
        yield TelnyxLive(fake_telnyx.fake, runner, client, key)
    finally:
        client.close()
        runner.stop()


def twilio_config(server: TwilioFakeServer, **changes: Any) -> TwilioConfig:
    from twilio_support import POOL, SMS_FROM

    fake = server.fake
    settings: dict[str, Any] = {
        "account_sid": fake.account_sid,
        "auth_token": fake.auth_token,
        "api_base": server.base_url,
        "sms_from": SMS_FROM,
        "numbers": POOL,
    }
    return TwilioConfig(**{**settings, **changes})


def reply_when_sent(fake: FakeTelnyx, to: str, text: str, *, sender: str = TELNYX_FROM) -> Any:
    """Once a message reached ``to``, the person answers ``text`` to ``sender``."""
    from twilio_support import in_background

    def act() -> None:
        fake.wait_for(lambda: len(fake.sent_to(to)) >= 1, timeout=10)
        fake.send_inbound(to, sender, text)

    return in_background(act)
