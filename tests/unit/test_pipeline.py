"""The request pipeline: retries, back-off, Retry-After, idempotency keys, timeouts,
error mapping. Each test runs with the sync and the async client."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from unit_support import MESSAGE_REPLY, Script, call, error, make_client, ok, raises

from humanwire import (
    AccountSuspendedError,
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AsyncHumanWire,
    AuthenticationError,
    BadRequestError,
    CallTimeoutError,
    ConflictError,
    GoneError,
    HumanWire,
    InternalServerError,
    InvalidRequestError,
    InvalidToNumberError,
    LiveChannelError,
    NotFoundError,
    PayloadTooLargeError,
    ProviderError,
    RateLimitError,
)
from humanwire._http import ClientOptions, backoff

Client = HumanWire | AsyncHumanWire
TO = "+12025550100"
CALL_ENDED = {
    "interactionId": "c1",
    "status": "ended",
    "outcome": "completed",
    "summary": "Agreed.",
    "from": "+12025550199",
    "to": TO,
}


def sms(client: Client, **extra: Any) -> Any:
    return client.messages.sms(to=TO, message="Ship it?", wait_time=30, **extra)


# -- retries -------------------------------------------------------------------------------


async def test_5xx_is_retried_with_the_same_idempotency_key(client: Client, script: Script) -> None:
    script.reply(error(500, "internal_error"), error(503, "internal_error"), ok(MESSAGE_REPLY))
    result = await call(sms(client))
    assert result.response == "Human response: yes"
    assert len(script.requests) == 3
    keys = script.keys()
    assert keys[0] is not None and len(set(keys)) == 1
    # Full jitter drawn at its ceiling (fixture): 0.5 then 1.0.
    assert script.sleeps == [0.5, 1.0]


async def test_each_call_gets_its_own_key(client: Client, script: Script) -> None:
    script.reply(ok(MESSAGE_REPLY))
    await call(sms(client))
    await call(sms(client))
    first, second = script.keys()
    assert first and second and first != second


async def test_given_idempotency_key_is_sent(client: Client, script: Script) -> None:
    script.reply(error(502, "internal_error"), ok(MESSAGE_REPLY))
    await call(sms(client, idempotency_key="order-42"))
    assert script.keys() == ["order-42", "order-42"]


async def test_retries_are_bounded_by_max_retries(client: Client, script: Script) -> None:
    script.reply(error(500, "internal_error", "exploded"))
    exc = await raises(InternalServerError, lambda: sms(client))
    assert len(script.requests) == 3  # one try + max_retries (2)
    assert exc.status_code == 500 and exc.message == "exploded"
    assert len(script.sleeps) == 2


async def test_max_retries_zero_sends_once(mode: str, script: Script) -> None:
    client = make_client(mode, script, max_retries=0)
    script.reply(error(500, "internal_error"))
    await raises(InternalServerError, lambda: sms(client))
    assert len(script.requests) == 1
    assert script.sleeps == []


async def test_with_options_changes_retries_of_the_copy_only(
    client: Client, script: Script
) -> None:
    script.reply(error(500, "internal_error"))
    patient = client.with_options(max_retries=4)
    assert patient.max_retries == 4 and client.max_retries == 2
    await raises(InternalServerError, lambda: sms(patient))
    assert len(script.requests) == 5
    script.requests.clear()
    await raises(InternalServerError, lambda: sms(client))
    assert len(script.requests) == 3


async def test_429_honours_retry_after(client: Client, script: Script) -> None:
    script.reply(error(429, "rate_limited", headers={"Retry-After": "3"}), ok(MESSAGE_REPLY))
    await call(sms(client))
    assert script.sleeps == [3.0]
    assert len(script.requests) == 2


async def test_provider_error_is_typed_and_retried_after_its_retry_after(
    client: Client, script: Script
) -> None:
    script.reply(error(502, "provider_error", "Twilio answered 503", headers={"Retry-After": "4"}))
    exc = await raises(ProviderError, lambda: sms(client))
    assert isinstance(exc, InternalServerError) and exc.retry_after == 4.0
    assert script.sleeps == [4.0, 4.0]  # both retries waited as told, with the same key
    assert len(set(script.keys())) == 1


async def test_429_without_retry_after_backs_off(client: Client, script: Script) -> None:
    script.reply(error(429, "rate_limited"), ok(MESSAGE_REPLY))
    await call(sms(client))
    assert script.sleeps == [0.5]


async def test_429_asking_for_a_long_wait_is_raised_not_slept(
    client: Client, script: Script
) -> None:
    script.reply(error(429, "rate_limited", "slow down", headers={"Retry-After": "3600"}))
    exc = await raises(RateLimitError, lambda: sms(client))
    assert exc.retry_after == 3600.0
    assert script.sleeps == [] and len(script.requests) == 1


async def test_429_exhausted_raises_rate_limit_error(client: Client, script: Script) -> None:
    script.reply(error(429, "rate_limited", headers={"Retry-After": "1"}))
    exc = await raises(RateLimitError, lambda: sms(client))
    assert exc.retry_after == 1.0 and exc.code == "rate_limited"
    assert script.sleeps == [1.0, 1.0]


async def test_504_timeout_from_phone_call_is_never_retried(client: Client, script: Script) -> None:
    script.reply(error(504, "timeout", "timeout"))
    exc = await raises(CallTimeoutError, lambda: client.phone.call(to=TO, message="Hi"))
    assert exc.status_code == 504 and exc.message == "timeout"
    assert len(script.requests) == 1 and script.sleeps == []


async def test_a_gateway_504_without_the_timeout_code_is_retried(
    client: Client, script: Script
) -> None:
    script.reply(httpx.Response(504, text="Gateway Timeout"), ok(MESSAGE_REPLY))
    await call(sms(client))
    assert len(script.requests) == 2


async def test_connection_errors_are_retried_then_raised(client: Client, script: Script) -> None:
    script.reply(httpx.ConnectError("refused"))
    exc = await raises(APIConnectionError, lambda: sms(client))
    assert not isinstance(exc, APITimeoutError)
    assert len(script.requests) == 3
    assert len(set(script.keys())) == 1


async def test_read_timeout_is_retried_with_the_same_key(client: Client, script: Script) -> None:
    script.reply(httpx.ReadTimeout("slow"), ok(MESSAGE_REPLY))
    result = await call(sms(client))
    assert result.responded is True
    first, second = script.keys()
    assert first == second


async def test_read_timeout_exhausted_is_api_timeout_error(client: Client, script: Script) -> None:
    script.reply(httpx.ReadTimeout("slow"))
    exc = await raises(APITimeoutError, lambda: sms(client))
    assert isinstance(exc, APIConnectionError)
    assert len(script.requests) == 3


async def test_a_pending_phone_call_is_not_sent_again_after_a_read_timeout(
    client: Client, script: Script
) -> None:
    script.reply(httpx.ReadTimeout("slow"), ok(CALL_ENDED))
    await raises(APITimeoutError, lambda: client.phone.call(to=TO, message="Hi"))
    assert len(script.requests) == 1


async def test_phone_call_that_could_not_connect_is_retried(client: Client, script: Script) -> None:
    script.reply(httpx.ConnectError("refused"), ok(CALL_ENDED))
    result = await call(client.phone.call(to=TO, message="Hi"))
    assert result.outcome == "completed" and result.from_ == "+12025550199"
    assert len(script.requests) == 2


@pytest.mark.parametrize(
    ("status", "code", "exc_type"),
    [
        (400, "invalid_request", InvalidRequestError),
        (400, "invalid_to_number", InvalidToNumberError),
        (400, "something_new", BadRequestError),
        (401, "unauthorized", AuthenticationError),
        (403, "account_suspended", AccountSuspendedError),
        (403, "live_channel", LiveChannelError),
        (404, "not_found", NotFoundError),
        (409, "conflict", ConflictError),
        (410, "gone", GoneError),
        (413, "payload_too_large", PayloadTooLargeError),
        (405, "method_not_allowed", APIStatusError),
    ],
)
async def test_client_errors_are_typed_and_not_retried(
    client: Client, script: Script, status: int, code: str, exc_type: type[APIStatusError]
) -> None:
    script.reply(error(status, code, "bad thing", field="to"))
    exc = await raises(exc_type, lambda: sms(client))
    assert type(exc) is exc_type
    assert (exc.status_code, exc.code, exc.message, exc.field) == (status, code, "bad thing", "to")
    assert exc.response is not None and exc.response.status_code == status
    assert exc.body == {"error": {"code": code, "message": "bad thing", "field": "to"}}
    assert len(script.requests) == 1 and script.sleeps == []


async def test_error_without_the_error_body_keeps_the_text(mode: str, script: Script) -> None:
    client = make_client(mode, script, max_retries=0)
    script.reply(httpx.Response(502, text="upstream broke"))
    exc = await raises(InternalServerError, lambda: sms(client))
    assert exc.code is None and exc.message == "upstream broke" and exc.body == "upstream broke"


async def test_a_2xx_body_that_is_not_the_model_is_a_response_validation_error(
    client: Client, script: Script
) -> None:
    script.reply(ok({"unexpected": True}))
    exc = await raises(APIResponseValidationError, lambda: sms(client))
    assert exc.status_code == 200 and exc.body == {"unexpected": True}
    script.reply(httpx.Response(200, text="<html>"))
    await raises(APIResponseValidationError, lambda: sms(client))


# -- headers -------------------------------------------------------------------------------


async def test_auth_and_keys_by_method(client: Client, script: Script) -> None:
    script.reply(ok([]))
    await call(client.numbers.list())
    get = script.last
    assert get.headers["Authorization"] == "Bearer hw_test_key"
    assert "Idempotency-Key" not in get.headers
    assert get.headers["User-Agent"].startswith("humanwire-python/")
    script.reply(ok())
    await call(client.numbers.delete("n1"))
    assert script.last.method == "DELETE" and "Idempotency-Key" not in script.last.headers


# -- timeouts derived from the wait -----------------------------------------------------------


async def test_read_timeout_follows_the_requested_wait(client: Client, script: Script) -> None:
    script.reply(ok(MESSAGE_REPLY))
    await call(client.messages.sms(to=TO, message="x"))
    await call(client.messages.sms(to=TO, message="x", wait_time=30))
    await call(client.messages.whatsapp(to=TO, message="x", wait_time=600))
    await call(client.messages.slack(to="U0HUMAN0001", message="x", wait_time=90))
    await call(client.messages.channel("ch_" + "a" * 24, message="x"))
    assert script.read_timeouts() == [30.0, 45.0, 615.0, 105.0, 615.0]
    assert {r.extensions["timeout"]["connect"] for r in script.requests} == {5.0}


async def test_read_timeout_of_calls_and_status(client: Client, script: Script) -> None:
    script.reply(ok(CALL_ENDED))
    await call(client.calls.create(to=TO, prompt="p"))
    await call(client.calls.create(to=TO, prompt="p", wait_for_call_end=True))
    await call(client.phone.call(to=TO, message="p"))
    script.reply(
        ok(
            {
                "interactionId": "i",
                "status": "pending",
                "createdAt": "2026-01-01T12:00:00Z",
                "kind": "call",
                "channel": "call",
            }
        )
    )
    await call(client.interactions.status("i"))
    await call(client.interactions.status("i", wait=20))
    assert script.read_timeouts() == [30.0, 615.0, 315.0, 30.0, 35.0]


async def test_read_timeout_of_forms(client: Client, script: Script) -> None:
    script.reply(ok({"interactionId": "f", "status": "pending", "formUrl": "http://x/f/t"}))
    field = {"id": "ok", "label": "OK?", "type": "checkbox"}
    await call(client.forms.sms(to=TO, title="t", fields=[field], follow_up_time=100))
    await call(client.forms.sms(to=TO, title="t", fields=[field], wait_time=120))
    assert script.read_timeouts() == [30.0, 135.0]


async def test_a_longer_configured_read_timeout_is_kept(mode: str, script: Script) -> None:
    client = make_client(mode, script, timeout=httpx.Timeout(100.0, connect=2.0))
    script.reply(ok(MESSAGE_REPLY))
    await call(client.messages.sms(to=TO, message="x", wait_time=30))
    await call(client.with_options(timeout=10.0).messages.sms(to=TO, message="x", wait_time=30))
    await call(client.with_options(timeout=None).messages.sms(to=TO, message="x", wait_time=30))
    assert script.read_timeouts() == [100.0, 45.0, None]
    assert script.requests[0].extensions["timeout"]["connect"] == 2.0


# -- back-off itself -------------------------------------------------------------------------


def test_backoff_is_full_jitter_under_a_doubling_ceiling() -> None:
    options = ClientOptions(base_url="http://x", api_key="k")
    for retry_number, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        draws = [backoff(options, retry_number) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in draws)
        assert max(draws) > ceiling / 2  # spread over the range, not a constant
    asked: list[tuple[float, float]] = []

    def jitter(low: float, high: float) -> float:
        asked.append((low, high))
        return high / 3

    assert backoff(options.copy(jitter=jitter), 3) == 4.0 / 3
    assert asked == [(0.0, 4.0)]


async def test_retry_timings_are_configurable(mode: str, script: Script) -> None:
    client = make_client(mode, script, retry_initial_delay=0.01, retry_max_delay=0.02)
    client._options = client._options.copy(jitter=lambda low, high: high)
    script.reply(error(500, "internal_error"))
    client = client.with_options(max_retries=3)
    await raises(InternalServerError, lambda: sms(client))
    assert script.sleeps == [0.01, 0.02, 0.02]


async def test_default_sleep_really_sleeps_briefly(mode: str) -> None:
    # No injected sleep: the drivers use time.sleep / asyncio.sleep.
    script = Script()
    transport = httpx.MockTransport(script.handle)
    script.reply(error(500, "internal_error"), ok(MESSAGE_REPLY))
    options: dict[str, Any] = {"retry_initial_delay": 0.001, "retry_max_delay": 0.001}
    if mode == "sync":
        client: Client = HumanWire(
            "k", "http://127.0.0.1:9", http_client=httpx.Client(transport=transport), **options
        )
    else:
        client = AsyncHumanWire(
            "k", "http://127.0.0.1:9", http_client=httpx.AsyncClient(transport=transport), **options
        )
    result = await call(sms(client))
    assert result.responded and len(script.requests) == 2
