"""The pytest plugin (entry point ``pytest11: humanwire``): fixtures of ``humanwire.testing``.

Loaded in every pytest run where humanwire is installed, so it imports nothing heavy
until a fixture is used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from humanwire import AsyncHumanWire, HumanWire
    from humanwire.server.config import ServiceConfig

    from .human import ScriptedHuman
    from .receiver import WebhookReceiver
    from .service import RunningService


@pytest.fixture(scope="session")
def humanwire_config(tmp_path_factory: pytest.TempPathFactory) -> ServiceConfig:
    """The configuration the session's service starts with: a temporary database and
    fast timings (``humanwire.testing.fast_config``). Override this fixture in your
    ``conftest.py`` to change a setting, e.g. the spam thresholds."""
    from .service import fast_config

    return fast_config(tmp_path_factory.mktemp("humanwire") / "service.db")


@pytest.fixture(scope="session")
def humanwire_service(humanwire_config: ServiceConfig) -> Iterator[RunningService]:
    """The humanwire service on a free loopback port, for the whole test session."""
    from .service import start_test_service

    service = start_test_service(humanwire_config.db_path, humanwire_config)
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture
def humanwire_api_key(humanwire_service: RunningService, request: pytest.FixtureRequest) -> str:
    """A new account for this test: nothing of other tests is visible to it."""
    return humanwire_service.create_account(request.node.name[:100])


@pytest.fixture
def humanwire_client(
    humanwire_service: RunningService, humanwire_api_key: str
) -> Iterator[HumanWire]:
    """A ``HumanWire`` client for this test's account."""
    from humanwire import HumanWire

    client = HumanWire(api_key=humanwire_api_key, base_url=humanwire_service.base_url)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def human(humanwire_service: RunningService, humanwire_api_key: str) -> Iterator[ScriptedHuman]:
    """The scripted human of this test's account (see ``humanwire.testing``)."""
    from .human import ScriptedHuman

    scripted = ScriptedHuman(humanwire_service.base_url, humanwire_api_key)
    try:
        yield scripted
    finally:
        scripted.close()


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """A webhook receiver on a free loopback port; ``register(client)`` subscribes it."""
    from .receiver import WebhookReceiver

    with WebhookReceiver() as receiver:
        yield receiver


def _async_client_fixture() -> Any:
    try:
        import pytest_asyncio
    except ImportError:  # pragma: no cover - the async fixture needs pytest-asyncio

        @pytest.fixture(name="async_humanwire_client")
        def missing_pytest_asyncio() -> None:
            pytest.fail("async_humanwire_client needs pytest-asyncio (pip install pytest-asyncio)")

        return missing_pytest_asyncio

    @pytest_asyncio.fixture(name="async_humanwire_client")
    async def async_client(
        humanwire_service: RunningService, humanwire_api_key: str
    ) -> AsyncIterator[AsyncHumanWire]:
        """An ``AsyncHumanWire`` client for this test's account."""
        from humanwire import AsyncHumanWire

        client = AsyncHumanWire(api_key=humanwire_api_key, base_url=humanwire_service.base_url)
        try:
            yield client
        finally:
            await client.aclose()

    return async_client


async_humanwire_client = _async_client_fixture()
