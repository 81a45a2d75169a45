"""Metrics access, request ids and log lines of the HTTP layer, in process (the real app
over ASGI on each store). The scrape after real traffic over real HTTP, a real
non-loopback client and ``humanwire serve --log-format json`` are in
``tests/integration/test_e2e_observe.py``."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import (
    BASE_URL,
    HUMAN,
    AppUnderTest,
    assert_error,
    fast_config,
    running_app,
    svc_fixture,
)
from prometheus_client.parser import text_string_to_metric_families

from humanwire.server.http.middleware import (
    JsonFormatter,
    TextFormatter,
    mask_address,
    redact_numbers,
)

__all__ = ["svc_fixture"]

HEX_ID = re.compile(r"[0-9a-f]{32}")
SECRET_TEXT = "the launch code is swordfish"


def client_from(svc: AppUnderTest, host: str, **headers: str) -> httpx.AsyncClient:
    """A client whose requests arrive from ``host`` (the ASGI scope's client address)."""
    transport = httpx.ASGITransport(svc.app, client=(host, 40000))
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL, headers=headers)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition: (name, labels) → value."""
    found: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, frozenset(labels.items())), 0.0)


# -- who may scrape ------------------------------------------------------------------------
async def test_metrics_answer_loopback_clients_without_a_token(svc: AppUnderTest) -> None:
    async with client_from(svc, "127.0.0.1") as local, client_from(svc, "::1") as local6:
        response = await local.get("/metrics")
        assert (await local6.get("/metrics")).status_code == 200
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert value(response.text, "humanwire_held_waits") == 0
    assert ("humanwire_open_windows", frozenset()) in samples(response.text)


async def test_metrics_refuse_other_clients_without_a_token(svc: AppUnderTest) -> None:
    async with client_from(svc, "203.0.113.9") as remote:
        refused = await remote.get("/metrics")
        # The API key opens the API, never the metrics.
        with_key = await remote.get("/metrics", headers={"Authorization": f"Bearer {svc.api_key}"})
    error = assert_error(refused, 401, "unauthorized", None)
    assert "loopback" in error["message"] and "metrics_token" in error["message"]
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert_error(with_key, 401, "unauthorized", None)


@pytest.fixture
async def guarded(tmp_path: Path, database: str) -> AsyncIterator[AppUnderTest]:
    config = fast_config(tmp_path, db_path=database, metrics_token="scrape-me-7f3a")
    async for service in running_app(config):
        yield service


async def test_a_metrics_token_is_needed_from_everywhere_once_set(guarded: AppUnderTest) -> None:
    token = {"Authorization": "Bearer scrape-me-7f3a"}
    async with client_from(guarded, "127.0.0.1") as local:
        # Behind a reverse proxy every client looks like loopback: the token decides.
        assert_error(await local.get("/metrics"), 401, "unauthorized", None)
        wrong = await local.get("/metrics", headers={"Authorization": "Bearer scrape-me-7f3b"})
        assert_error(wrong, 401, "unauthorized", None)
        key = await local.get("/metrics", headers={"Authorization": f"Bearer {guarded.api_key}"})
        assert_error(key, 401, "unauthorized", None)
        assert (await local.get("/metrics", headers=token)).status_code == 200
    async with client_from(guarded, "203.0.113.9", **token) as remote:
        response = await remote.get("/metrics")
    assert response.status_code == 200, response.text
    assert "humanwire_http_requests_total" in response.text


async def test_without_prometheus_client_metrics_are_a_404_and_the_rest_works(
    tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None in sys.modules: the import fails and find_spec finds nothing, as uninstalled.
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    async for svc in running_app(fast_config(tmp_path, db_path=database)):
        assert svc.engine.metrics.enabled is False
        async with svc.anonymous() as anonymous:
            response = await anonymous.get("/metrics")
        error = assert_error(response, 404, "not_found", None)
        assert 'pip install "humanwire[metrics]"' in error["message"]
        assert HEX_ID.fullmatch(response.headers["Humanwire-Request-Id"])
        sent = await svc.client.post("/messages/sms", json={"to": HUMAN, "message": "hi"})
        assert sent.status_code == 200, sent.text
        assert sent.headers["Humanwire-Request-Id"]


async def test_two_services_in_one_process_count_apart(tmp_path: Path, database: str) -> None:
    first_config = fast_config(tmp_path, db_path=database)
    second_config = fast_config(tmp_path, db_path=str(tmp_path / "second.db"))
    async for first in running_app(first_config):
        async for second in running_app(second_config):
            for _ in range(2):
                sent = await first.client.post("/messages/sms", json={"to": HUMAN, "message": "x"})
                assert sent.status_code == 200, sent.text
            async with first.anonymous() as a, second.anonymous() as b:
                one, two = (await a.get("/metrics")).text, (await b.get("/metrics")).text
    labels = {"kind": "message", "channel": "sms", "outcome": "ok"}
    assert value(one, "humanwire_sends_total", **labels) == 2
    assert value(two, "humanwire_sends_total", **labels) == 0


# -- request ids ---------------------------------------------------------------------------
async def test_a_well_formed_request_id_is_echoed_on_success_and_errors(
    svc: AppUnderTest,
) -> None:
    given = {"Humanwire-Request-Id": "req-2024.01:abc_42"}
    responses = [
        await svc.client.get("/numbers", headers=given),  # 200
        await svc.client.get("/no/such/endpoint", headers=given),  # 404
        await svc.client.delete("/healthz", headers=given),  # 405
        await svc.client.post("/messages/sms", json={"to": "12"}, headers=given),  # 400
        await svc.client.post(  # 413
            "/messages/sms", content=b"x" * (svc.config.max_body_bytes + 1), headers=given
        ),
    ]
    async with svc.anonymous() as anonymous:
        responses.append(await anonymous.get("/numbers", headers=given))  # 401
    assert [r.status_code for r in responses] == [200, 404, 405, 400, 413, 401]
    assert {r.headers["Humanwire-Request-Id"] for r in responses} == {"req-2024.01:abc_42"}


async def test_a_malformed_or_missing_request_id_is_replaced_by_a_new_one(
    svc: AppUnderTest,
) -> None:
    bad: list[str | bytes] = ["", "has space", "x" * 129, "semi;colon", "-lead", "ünï".encode()]
    seen = set()
    for header in bad:
        response = await svc.client.get("/numbers", headers={"Humanwire-Request-Id": header})
        assert response.status_code == 200
        seen.add(response.headers["Humanwire-Request-Id"])
    response = await svc.client.get("/numbers")
    seen.add(response.headers["Humanwire-Request-Id"])
    assert len(seen) == len(bad) + 1
    assert all(HEX_ID.fullmatch(rid) for rid in seen), seen


async def test_a_500_carries_the_request_id_too(
    svc: AppUnderTest, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(svc.engine.numbers, "of", broken)
    transport = httpx.ASGITransport(svc.app, raise_app_exceptions=False)
    headers = {"Authorization": f"Bearer {svc.api_key}", "Humanwire-Request-Id": "boom-1"}
    caplog.set_level(logging.INFO, logger="humanwire")
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        response = await client.get("/numbers", headers=headers)
    assert_error(response, 500, "internal_error", None)
    assert response.headers["Humanwire-Request-Id"] == "boom-1"
    [failure] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert failure.getMessage() == "internal error on GET /numbers (request boom-1)"
    [line] = [r for r in caplog.records if r.name == "humanwire.access"]
    assert (line.hw["status"], line.hw["request_id"], line.hw["route"]) == (
        500,
        "boom-1",
        "/numbers",
    )


# -- log lines -----------------------------------------------------------------------------
def formatted(records: list[logging.LogRecord]) -> str:
    text, structured = TextFormatter(), JsonFormatter()
    return "\n".join(f"{text.format(r)}\n{structured.format(r)}" for r in records)


async def test_request_and_state_change_lines_carry_ids_and_no_secrets(
    svc: AppUnderTest, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="humanwire")
    sent = await svc.client.post(
        "/messages/sms",
        json={"to": HUMAN, "message": SECRET_TEXT},
        headers={"Humanwire-Request-Id": "send-1"},
    )
    assert sent.status_code == 200, sent.text
    interaction_id = sent.json()["interactionId"]
    status = await svc.client.get(f"/interactions/{interaction_id}/status")
    assert status.status_code == 200
    account_id = (await svc.engine.accounts.authenticate(svc.api_key)).id  # type: ignore[union-attr]

    events = [(r.name, r.hw["event"], r.hw) for r in caplog.records if hasattr(r, "hw")]
    access = [hw for name, event, hw in events if event == "http.request"]
    assert [(a["method"], a["route"], a["status"]) for a in access] == [
        ("POST", "/messages/sms", 200),
        ("GET", "/interactions/{interactionId}/status", 200),  # the template, not the path
    ]
    assert access[0]["request_id"] == "send-1"
    assert access[1]["request_id"] == status.headers["Humanwire-Request-Id"]
    assert all(a["account_id"] == account_id for a in access)
    assert all(a["interaction_id"] == interaction_id for a in access)
    assert all(a["duration_ms"] >= 0 for a in access)
    [opened] = [hw for _n, event, hw in events if event == "interaction.opened"]
    assert (opened["interaction_id"], opened["request_id"]) == (interaction_id, "send-1")
    assert (opened["channel"], opened["to"]) == ("sms", mask_address(HUMAN))
    [delivered] = [hw for _n, event, hw in events if event == "interaction.delivered"]
    assert delivered["interaction_id"] == interaction_id

    everything = formatted(caplog.records)
    assert SECRET_TEXT not in everything
    assert svc.api_key not in everything
    assert HUMAN not in everything and HUMAN[1:] not in everything


async def test_a_reply_and_an_expiry_are_logged_without_the_text(
    svc: AppUnderTest, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="humanwire")
    answered = await svc.client.post(
        "/messages/sms", json={"to": HUMAN, "message": "Ship?", "followUpTime": 5}
    )
    reply = {"channel": "sms", "from": HUMAN, "to": "+12025550199", "body": SECRET_TEXT}
    assert (await svc.client.post("/sandbox/replies", json=reply)).status_code < 300
    expiring = await svc.client.post(
        "/messages/sms", json={"to": "+12025550123", "message": "Still there?", "waitTime": 1}
    )
    assert expiring.json()["responded"] is False
    first, second = answered.json()["interactionId"], expiring.json()["interactionId"]
    events = {
        (r.hw["event"], r.hw["interaction_id"]): r.hw for r in caplog.records if hasattr(r, "hw")
    }
    received = events[("reply.received", first)]
    assert received["matched"] is True and received["sender"] == mask_address(HUMAN)
    assert events[("interaction.answered", first)]["handed_to"] == "webhooks"
    waited = events[("interaction.wait_expired", second)]
    assert waited["request_id"] is None  # a timer's line: no request caused it
    expired = events[("interaction.expired", second)]
    assert expired["outcome"] == "no_response"
    assert SECRET_TEXT not in formatted(caplog.records)


# -- the formats and the rule --------------------------------------------------------------
def test_mask_address() -> None:
    assert mask_address("+12025550100") == "+120•••00"
    assert mask_address("whatsapp:+447700900123") == "+447•••23"
    assert mask_address("U0HUMAN0001") == "U0HU•••01"
    assert mask_address("+1234") == "•••"
    assert mask_address(None) is None


def test_redact_numbers_in_a_providers_message() -> None:
    message = "Twilio 21211: The 'To' number +15005550001 is not valid (HTTP 400)"
    assert (
        redact_numbers(message) == "Twilio 21211: The 'To' number +150•••01 is not valid (HTTP 400)"
    )
    assert redact_numbers("call (415) 555-0100 now") == "call (415)•••00 now"


def test_json_lines_have_fixed_keys_and_text_lines_read_as_key_values() -> None:
    from humanwire.server.http.middleware import log_event

    logger = logging.getLogger("humanwire.test-observe")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        log_event(logger, "interaction.opened", interaction_id="i-1", channel="sms", note="a b")
        logger.warning("plain %s", "words")
    finally:
        logger.removeHandler(handler)
    event, plain = (json.loads(JsonFormatter().format(r)) for r in records)
    assert list(event)[:6] == ["ts", "level", "logger", "event", "request_id", "interaction_id"]
    assert event["event"] == "interaction.opened" and event["channel"] == "sms"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["ts"])
    assert plain["event"] is None and plain["message"] == "plain words"
    assert plain["level"] == "WARNING"
    line = TextFormatter().format(records[0])
    assert line.endswith(
        'INFO humanwire.test-observe interaction.opened interaction_id=i-1 channel=sms note="a b"'
    )


def test_the_library_configures_no_logging() -> None:
    # Importing, building and running a service adds no handler anywhere (only
    # `humanwire serve` configures logging), uvicorn's loggers included.
    code = (
        "import logging\n"
        "from humanwire.server.config import ServiceConfig\n"
        "from humanwire.server.runtime.runner import ServiceRunner\n"
        "with ServiceRunner(ServiceConfig()) as runner:\n"
        "    runner.create_account('x')\n"
        "names = ['', 'humanwire', 'uvicorn', 'uvicorn.error', 'uvicorn.access']\n"
        "print([(n, logging.getLogger(n).handlers) for n in names])\n"
        "print(logging.getLogger().level)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    handlers, level = out.stdout.splitlines()
    assert handlers == str(
        [(n, []) for n in ["", "humanwire", "uvicorn", "uvicorn.error", "uvicorn.access"]]
    )
    assert level == str(logging.WARNING)
    assert out.stderr == ""


def test_a_metrics_token_setting_reaches_the_config(tmp_path: Path) -> None:
    from humanwire.server.runtime.settings import SettingsError, load_settings

    env = {"HUMANWIRE_METRICS_TOKEN": "scrape-me", "HUMANWIRE_LOG_FORMAT": "JSON"}
    settings = load_settings(None, env, {"log_level": "debug"})
    assert settings.to_service_config().metrics_token == "scrape-me"
    assert (settings.log_format, settings.log_level) == ("json", "debug")
    assert "scrape-me" not in repr(settings) and "scrape-me" not in repr(
        replace(settings.to_service_config())
    )
    with pytest.raises(SettingsError) as raised:
        load_settings(
            None, {"HUMANWIRE_METRICS_TOKEN": "has space", "HUMANWIRE_LOG_FORMAT": "xml"}, {}
        )
    problems = " ".join(raised.value.problems)
    assert "metrics_token: must not contain spaces" in problems
    assert "log_format: must be one of text, json" in problems
    assert "has space" not in problems
