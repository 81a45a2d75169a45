"""A humanwire service whose whatsapp goes through Meta's Cloud API, wired to the Meta
contract fake, both on loopback: the service sends through the fake's Graph API, the
fake signs the people's messages, presses and delivery statuses to the service's
webhook, and the test plays the people."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from humanwire.server.config import MetaWhatsAppConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.service import fast_config
from humanwire.testing.whatsapp_meta import (
    FakeMetaWhatsApp,
    MetaWhatsAppFakeServer,
    WhatsAppPerson,
    WhatsAppSent,
)

__all__ = ["MetaLive", "fake_meta", "meta_config", "meta_live", "running_meta"]


def meta_config(server: MetaWhatsAppFakeServer, **templates: str) -> MetaWhatsAppConfig:
    fake = server.fake
    return MetaWhatsAppConfig(
        phone_number_id=fake.phone_number_id,
        sender=fake.sender,
        access_token=fake.access_token,
        app_secret=fake.app_secret,
        verify_token=fake.verify_token,
        api_base=server.api_base,
        templates=templates,
    )


@dataclass
class MetaLive:
    fake: FakeMetaWhatsApp
    runner: ServiceRunner
    http: httpx.Client
    ada: WhatsAppPerson
    """A person who wrote to the business number (her window is open)."""
    key: str
    """The test account's API key."""

    @property
    def base_url(self) -> str:
        return self.runner.base_url

    def sent(self, person: WhatsAppPerson, count: int = 1, timeout: float = 10) -> WhatsAppSent:
        """The ``count``-th message the business sent ``person``."""
        self.fake.wait_for(lambda: len(self.fake.sent_to(person)) >= count, timeout=timeout)
        return self.fake.sent_to(person)[count - 1]


@pytest.fixture
def fake_meta() -> Iterator[MetaWhatsAppFakeServer]:
    with MetaWhatsAppFakeServer() as server:
        yield server


@contextmanager
def running_meta(
    database: str, server: MetaWhatsAppFakeServer, **changes: Any
) -> Iterator[MetaLive]:
    """The service wired to the fake (``changes`` to its config); Ada has written first."""
    fake = server.fake
    config = meta_config(server, notification="hw_notification", request="hw_request")
    runner = ServiceRunner(replace(fast_config(database), whatsapp_meta=config, **changes))
    runner.start()
    fake.webhook_url = f"{runner.base_url}/providers/meta/whatsapp"
    key = runner.create_account("tester")
    http = httpx.Client(
        base_url=runner.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    ada = fake.add_person("Ada")
    try:
        assert fake.say(ada, "hi").status_code == 200
        # Taken in the background: her window is open once the service has it (or her
        # "hi" could answer a test's first ask).
        store = runner.engine.store
        fake.wait_for(
            lambda: runner.call(store.get_provider_state, "meta-whatsapp-window", ada.wa_id)
        )
        yield MetaLive(fake, runner, http, ada, key)
    finally:
        http.close()
        runner.stop()


@pytest.fixture
def meta_live(database: str, fake_meta: MetaWhatsAppFakeServer) -> Iterator[MetaLive]:
    """The service wired to the fake, on each store in turn; Ada has written first."""
    with running_meta(database, fake_meta) as live:
        yield live
