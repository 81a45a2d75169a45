"""Metrics and logs of a running service, over real HTTP: ``/metrics`` scraped after real
traffic (sends, a sandbox reply, a form submission, a window expiring, webhooks
delivered and failing), a client on a non-loopback address, and the JSON log lines of a
real ``humanwire serve --log-format json``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from e2e_support import HUMAN, StartService
from prometheus_client.parser import text_string_to_metric_families

from humanwire import HumanWire
from humanwire.server.config import ServiceConfig
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing import ScriptedHuman, WebhookReceiver

FIELDS = [{"id": "name", "label": "Name", "type": "text"}]
SECRET_TEXT = "the vault opens with 0451"
SECRET_REPLY = "my pin is 2468"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(base_url: str, headers: dict[str, str] | None = None) -> Samples:
    response = httpx.get(f"{base_url}/metrics", headers=headers, trust_env=False)
    assert response.status_code == 200, response.text
    found: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def get(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def eventually(base_url: str, check: Callable[[Samples], bool], timeout: float = 10.0) -> Samples:
    deadline = time.monotonic() + timeout
    while True:
        found = scrape(base_url)
        if check(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_metrics_after_real_traffic(start_service: StartService) -> None:
    # Two attempts per delivery, the retry a second later: the failing row is seen pending.
    service = start_service(webhook_max_attempts=2, webhook_retry_base=1.0)
    key = service.create_account("metrics")
    base = service.base_url
    before = scrape(base)
    assert get(before, "humanwire_held_waits") == 0
    with (
        HumanWire(api_key=key, base_url=base) as client,
        ScriptedHuman(base, key) as human,
        WebhookReceiver() as good,
        WebhookReceiver() as bad,
    ):
        good.register(client, ["message.received"])
        bad.register(client, ["message.received"])
        bad.set_status(500)

        # A held send: the gauges see it while it waits (the human answers 2 s later).
        reply = human.reply("yes", delay=2.0)
        held: dict[str, object] = {}
        thread = threading.Thread(
            target=lambda: held.update(
                result=client.messages.sms(message="Ship?", to=HUMAN, wait_time=30)
            )
        )
        thread.start()
        holding = eventually(base, lambda s: get(s, "humanwire_held_waits") == 1)
        assert get(holding, "humanwire_held_waits") == 1
        assert get(holding, "humanwire_open_windows") >= 1
        reply.wait()
        thread.join(10)
        assert held["result"].responded is True  # type: ignore[attr-defined]

        form_action = human.fill_form({"name": "Ada"})
        answered_form = client.forms.sms(title="Who?", fields=FIELDS, to=HUMAN, wait_time=30)
        form_action.wait()
        assert answered_form.responded is True

        silence = human.stay_silent(to="+12025550123")
        expired = client.messages.sms(message="Anyone?", to="+12025550123", wait_time=1)
        silence.wait()
        assert expired.responded is False

        # An unsolicited text: message.received to both webhooks; one fails twice.
        human.send_text("hello there")
        good.wait_for("message.received")
        retrying = eventually(
            base, lambda s: get(s, "humanwire_webhook_attempts_total", result="retry") == 1
        )
        assert get(retrying, "humanwire_webhook_outbox_depth") == 1
        after = eventually(
            base, lambda s: get(s, "humanwire_webhook_attempts_total", result="failed") == 1
        )
        assert httpx.get(f"{base}/no/such/thing", trust_env=False).status_code == 404
        after = scrape(base)

    sms = {"channel": "sms"}
    assert get(after, "humanwire_held_waits") == 0
    assert get(after, "humanwire_webhook_outbox_depth") == 0
    assert get(after, "humanwire_interactions_opened_total", kind="message", **sms) == 2
    assert get(after, "humanwire_interactions_opened_total", kind="form", **sms) == 1
    assert get(after, "humanwire_sends_total", kind="message", outcome="ok", **sms) == 2
    assert get(after, "humanwire_sends_total", kind="form", outcome="ok", **sms) == 1
    ended = "humanwire_interactions_ended_total"
    assert get(after, ended, kind="message", outcome="answered", **sms) == 1
    assert get(after, ended, kind="form", outcome="answered", **sms) == 1
    assert get(after, ended, kind="message", outcome="no_response", **sms) == 1
    assert get(after, "humanwire_replies_total", matched="true", **sms) == 1
    assert get(after, "humanwire_replies_total", matched="false", **sms) == 1
    answer = "humanwire_time_to_answer_seconds"
    assert get(after, f"{answer}_count", kind="message", **sms) == 1
    assert get(after, f"{answer}_count", kind="form", **sms) == 1
    assert 0 < get(after, f"{answer}_sum", kind="message", **sms) < 30
    assert get(after, f"{answer}_bucket", kind="form", le="30.0", **sms) == 1
    attempts = "humanwire_webhook_attempts_total"
    assert get(after, attempts, result="delivered") == 1
    assert get(after, attempts, result="retry") == 1
    assert get(after, attempts, result="failed") == 1
    assert get(after, "humanwire_webhook_attempt_seconds_count") == 3
    requests = "humanwire_http_requests_total"
    assert get(after, requests, method="POST", route="/messages/sms", status="200") == 2
    assert get(after, requests, method="POST", route="/forms/sms", status="200") == 1
    assert get(after, requests, method="POST", route="/sandbox/replies", status="204") == 2
    assert get(after, requests, method="POST", route="/f/{token}", status="200") >= 1
    assert get(after, requests, method="GET", route="<unmatched>", status="404") == 1
    assert get(after, requests, method="GET", route="/metrics", status="200") >= 4
    seconds = "humanwire_http_request_seconds"
    assert get(after, f"{seconds}_sum", method="POST", route="/messages/sms") >= 1.0


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (None when it has none)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.254", 9))  # no packet is sent: it only picks a route
        address = str(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_a_client_on_another_address_needs_the_metrics_token(database: str) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to connect from")
    config = ServiceConfig(db_path=database, metrics_token="scrape-token-1")
    with ServiceRunner(config, "0.0.0.0", 0) as runner:
        remote = f"http://{address}:{runner.port}"
        key = runner.create_account("remote")
        refused = httpx.get(f"{remote}/metrics", trust_env=False)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "unauthorized"
        assert refused.headers["Humanwire-Request-Id"]
        with_key = httpx.get(
            f"{remote}/metrics", headers={"Authorization": f"Bearer {key}"}, trust_env=False
        )
        assert with_key.status_code == 401
        found = scrape(remote, {"Authorization": "Bearer scrape-token-1"})
        assert (
            get(
                found, "humanwire_http_requests_total", method="GET", route="/metrics", status="401"
            )
            == 2
        )

    config = ServiceConfig(db_path=database)  # no token: loopback only
    with ServiceRunner(config, "0.0.0.0", 0) as runner:
        remote = f"http://{address}:{runner.port}"
        refused = httpx.get(f"{remote}/metrics", trust_env=False)
        assert refused.status_code == 401
        assert "loopback" in refused.json()["error"]["message"]
        assert scrape(f"http://127.0.0.1:{runner.port}")  # loopback: no token needed


def test_serve_json_logs_carry_ids_and_no_secrets(tmp_path: Path, database: str) -> None:
    env = {**os.environ, "HUMANWIRE_HOME": str(tmp_path / "home")}
    env.pop("HUMANWIRE_BASE_URL", None)
    env.pop("HUMANWIRE_API_KEY", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "humanwire.cli",
            "serve",
            "--port",
            "0",
            "--db",
            database,
            "--log-format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        lines = dict(process.stdout.readline().split(":", 1) for _ in range(3))
        base, key = lines["Base URL"].strip(), lines["API key"].strip()
        headers = {"Authorization": f"Bearer {key}"}
        sent = httpx.post(
            f"{base}/messages/sms",
            json={"to": HUMAN, "message": SECRET_TEXT, "followUpTime": 30},
            headers={**headers, "Humanwire-Request-Id": "agent-req-1"},
            trust_env=False,
        )
        assert sent.status_code == 200, sent.text
        interaction_id = sent.json()["interactionId"]
        reply = {"channel": "sms", "from": HUMAN, "to": "+12025550199", "body": SECRET_REPLY}
        replied = httpx.post(
            f"{base}/sandbox/replies", json=reply, headers=headers, trust_env=False
        )
        assert replied.status_code == 204, replied.text
        refused = httpx.get(
            f"{base}/numbers", headers={"Authorization": "Bearer hw_nope"}, trust_env=False
        )
        assert refused.status_code == 401
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err

    records = [json.loads(line) for line in err.splitlines()]  # every line is JSON
    assert all(
        {"ts", "level", "logger", "event", "request_id", "interaction_id"} <= set(r)
        for r in records
    )
    by_event: dict[str, list[dict[str, object]]] = {}
    for record in records:
        by_event.setdefault(str(record["event"]), []).append(record)
    assert records[0]["event"] == "service.started"
    access = by_event["http.request"]
    send_line = next(r for r in access if r["route"] == "/messages/sms")
    assert (send_line["request_id"], send_line["interaction_id"]) == ("agent-req-1", interaction_id)
    assert send_line["status"] == 200 and send_line["method"] == "POST"
    reply_line = next(r for r in access if r["route"] == "/sandbox/replies")
    assert reply_line["request_id"] == replied.headers["Humanwire-Request-Id"]
    refused_line = next(r for r in access if r["status"] == 401)
    assert refused_line["request_id"] == refused.headers["Humanwire-Request-Id"]
    [opened] = by_event["interaction.opened"]
    assert (opened["interaction_id"], opened["request_id"]) == (interaction_id, "agent-req-1")
    [answered] = by_event["interaction.answered"]
    assert answered["interaction_id"] == interaction_id
    assert answered["request_id"] == reply_line["request_id"]
    [received] = by_event["reply.received"]
    assert received["matched"] is True
    assert by_event["service.stopping"]

    for secret in (SECRET_TEXT, SECRET_REPLY, key, HUMAN, HUMAN[1:]):
        assert secret not in err, secret
