"""The client finds the embedded service through ``humanwire.embedded_service``: a
registered starter wins over the default, and ``None`` restores the default (an entry
point, loaded when needed, so ``import humanwire`` never loads the server)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from humanwire import HumanWire
from humanwire.embedded_service import (
    default_entry_point,
    embedded_service,
    register_embedded_service,
)


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key: str


@pytest.fixture(autouse=True)
def default_starter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("HUMANWIRE_BASE_URL", raising=False)
    monkeypatch.delenv("HUMANWIRE_API_KEY", raising=False)
    yield
    register_embedded_service(None)


def test_a_registered_starter_is_the_embedded_service() -> None:
    started: list[int] = []

    def starter() -> Endpoint:
        started.append(1)
        return Endpoint("http://127.0.0.1:1", "hw_registered")

    register_embedded_service(starter)
    with HumanWire() as client:
        assert (client.base_url, client.api_key) == ("http://127.0.0.1:1", "hw_registered")
    assert started == [1]


def test_none_restores_the_declared_default_starter(monkeypatch: pytest.MonkeyPatch) -> None:
    import humanwire.server.runtime.embedded as embedded

    register_embedded_service(lambda: Endpoint("http://127.0.0.1:1", "hw_registered"))
    register_embedded_service(None)
    monkeypatch.setattr(
        embedded, "ensure_embedded_service", lambda: Endpoint("http://127.0.0.1:2", "hw_default")
    )
    assert (
        default_entry_point().value == "humanwire.server.runtime.embedded:ensure_embedded_service"
    )
    assert embedded_service() == Endpoint("http://127.0.0.1:2", "hw_default")
