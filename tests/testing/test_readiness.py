"""Ready means usable: a script that waits for ``/healthz`` (or ``/readyz``) to answer 200
and then calls with the key the service was started with is never refused.

The startup account's creation is held at a gate (``account_gate``), so what the service
answers while the key does not exist yet is seen every time, not only when a race is lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from account_gate import held_create_account

from humanwire.server.engine.accounts import Accounts
from humanwire.server.runtime import embedded

GATE_SCRIPT = Path(__file__).with_name("account_gate.py")
KEY = "hw_readiness_key_given_at_start_0000"
PROBES = ("/healthz", "/readyz")
HELD_PROBE_TIMEOUT = 2.0
"""Seconds a probe made while the account is held waits: the old code answered at once."""


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:g} s"
        time.sleep(0.01)


def _call_with_key(base_url: str) -> httpx.Response:
    return httpx.get(
        f"{base_url}/numbers",
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=60,
        trust_env=False,
    )


def _probe_while_held(base_url: str) -> None:
    """Each probe either gets no answer yet, or its 200 means the key works already."""
    for path in PROBES:
        try:
            probe = httpx.get(f"{base_url}{path}", timeout=HELD_PROBE_TIMEOUT, trust_env=False)
        except httpx.HTTPError:
            continue  # not answered (connections wait until the service is ready)
        if probe.status_code == 200:
            assert _call_with_key(base_url).status_code != 401, (
                f"{path} answered 200 before the API key existed"
            )


def _first_ready_answer_then_call(base_url: str) -> None:
    """Polls as fast as it can; on the first 200 of each probe, calls with the key."""
    for path in PROBES:
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline, f"{path} never answered 200"
            try:
                probe = httpx.get(f"{base_url}{path}", timeout=5, trust_env=False)
            except httpx.HTTPError:
                continue
            if probe.status_code == 200:
                break
        assert _call_with_key(base_url).status_code == 200, path


def test_serve_with_a_key_answers_ready_only_once_the_key_works(
    tmp_path: Path, database: str
) -> None:
    gate, started = tmp_path / "gate", tmp_path / "creating"
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "HUMANWIRE_HOME": str(tmp_path / "home")}
    process = subprocess.Popen(
        [
            sys.executable,
            str(GATE_SCRIPT),
            str(gate),
            str(started),
            "serve",
            "--port",
            str(port),
            "--db",
            database,
            "--api-key",
            KEY,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        _wait_until(lambda: started.exists() or process.poll() is not None, "account creation")
        assert process.poll() is None, process.communicate()
        _probe_while_held(base_url)
        gate.touch()
        _first_ready_answer_then_call(base_url)
        assert process.stdout is not None
        assert process.stdout.readline() == f"Base URL: {base_url}\n"
        assert process.stdout.readline() == f"API key:  {KEY}\n"
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_the_embedded_service_answers_only_once_its_recorded_key_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A recorded key whose database is gone: the embedded service creates its account
    # with that key, which notebooks and shells may hold already.
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("HUMANWIRE_HOME", str(tmp_path))
    monkeypatch.setenv("HUMANWIRE_EMBEDDED_PORT", str(port))
    (tmp_path / "embedded.json").write_text(json.dumps({"base_url": base_url, "api_key": KEY}))
    gate, started = tmp_path / "gate", tmp_path / "creating"
    monkeypatch.setattr(Accounts, "create", held_create_account(gate, started))
    embedded.stop_embedded_service()
    services: list[embedded.EmbeddedService] = []
    starting = threading.Thread(
        target=lambda: services.append(embedded.ensure_embedded_service()), daemon=True
    )
    starting.start()
    try:
        _wait_until(started.exists, "account creation")
        _probe_while_held(base_url)
        gate.touch()
        _first_ready_answer_then_call(base_url)
        starting.join(60)
        [service] = services
        assert (service.base_url, service.api_key, service.in_process) == (base_url, KEY, True)
    finally:
        gate.touch()
        starting.join(60)
        embedded.stop_embedded_service()
