"""Fixtures of the unit tests: ``client`` runs each test with the sync and the async client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from unit_support import Script, make_client

from humanwire import AsyncHumanWire, HumanWire


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(mode: str, script: Script) -> Iterator[HumanWire | AsyncHumanWire]:
    made = make_client(mode, script)
    # Deterministic back-off: full jitter drawn at its ceiling.
    made._options = made._options.copy(jitter=lambda low, high: high)
    yield made
