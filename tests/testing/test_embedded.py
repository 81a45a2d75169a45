"""Embedded mode: a client without a base URL starts or joins a service on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from humanwire import HumanWire
from humanwire.server.config import ServiceConfig
from humanwire.server.runtime import embedded
from humanwire.server.runtime.runner import ServiceRunner


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HUMANWIRE_HOME", str(tmp_path))
    monkeypatch.setenv("HUMANWIRE_EMBEDDED_PORT", "0")
    monkeypatch.delenv("HUMANWIRE_BASE_URL", raising=False)
    monkeypatch.delenv("HUMANWIRE_API_KEY", raising=False)
    embedded.stop_embedded_service()
    yield tmp_path
    embedded.stop_embedded_service()


def test_two_clients_share_one_in_process_service(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with HumanWire() as first, HumanWire() as second:
        assert first.base_url == second.base_url
        assert first.base_url.startswith("http://127.0.0.1:")
        sent = first.messages.sms(message="hello", to="+12025550100")
        # Same account too: the second client sees the first one's interaction.
        assert second.interactions.status(sent.interaction_id).interaction_id == (
            sent.interaction_id
        )
    service = embedded.ensure_embedded_service()
    assert service.in_process and service.inbox_url == f"{service.base_url}/inbox"
    state = json.loads((home / "embedded.json").read_text())
    assert state == {"base_url": service.base_url, "api_key": service.api_key}
    assert (home / "embedded.db").exists()
    err = capsys.readouterr().err
    line = (
        f"humanwire: embedded service at {service.base_url} — inbox: "
        f"{service.base_url}/inbox (key: {service.api_key})"
    )
    assert err.count(line) == 1


def test_the_key_survives_a_restart(home: Path) -> None:
    first = embedded.ensure_embedded_service()
    embedded.stop_embedded_service()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{first.base_url}/healthz", trust_env=False)
    second = embedded.ensure_embedded_service()
    assert second.api_key == first.api_key
    numbers = httpx.get(
        f"{second.base_url}/numbers",
        headers={"Authorization": f"Bearer {second.api_key}"},
        trust_env=False,
    )
    assert numbers.status_code == 200


def test_a_service_already_listening_is_reused(home: Path) -> None:
    # As `humanwire serve` on this home would leave it.
    with ServiceRunner(ServiceConfig(db_path=str(home / "other.db"))) as running:
        key = running.create_account("serve")
        embedded.record_embedded_service(running.base_url, key)
        service = embedded.ensure_embedded_service()
        assert not service.in_process
        assert (service.base_url, service.api_key) == (running.base_url, key)
        with HumanWire() as client:
            assert client.base_url == running.base_url
    # That service is gone: the next call starts one here, with the recorded key.
    embedded.stop_embedded_service()
    restarted = embedded.ensure_embedded_service()
    assert restarted.in_process and restarted.api_key == key


def test_a_recorded_key_the_service_refuses_starts_a_private_one(home: Path) -> None:
    with ServiceRunner(ServiceConfig(db_path=str(home / "other.db"))) as running:
        embedded.record_embedded_service(running.base_url, "hw_not_an_account_there_0000000000")
        service = embedded.ensure_embedded_service()
        assert service.in_process
        assert service.base_url != running.base_url


def test_preferred_port_must_be_a_number(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANWIRE_EMBEDDED_PORT", "eighty")
    with pytest.raises(ValueError, match="HUMANWIRE_EMBEDDED_PORT"):
        embedded.ensure_embedded_service()


def test_a_busy_preferred_port_means_a_free_one(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as squatter:  # something else, not humanwire, holds the port
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        monkeypatch.setenv("HUMANWIRE_EMBEDDED_PORT", str(port))
        service = embedded.ensure_embedded_service()
        assert service.in_process
        assert service.base_url != f"http://127.0.0.1:{port}"
        health = httpx.get(f"{service.base_url}/healthz", trust_env=False)
        assert health.json() == {"status": "ok"}
