"""Twilio's REST API (2010-04-01), the few operations the service uses, over httpx.

Why not ``twilio.rest.Client``: its async path runs on aiohttp with a session of its own
per client, while the service already runs httpx; the request shapes are small and
fixed, and the contract fake checks every one of them against Twilio's published
description. The ``twilio`` package still does what only it should do here: validate
signatures and build TwiML.

A slow or failing Twilio never holds the service up: every request has a timeout, each
account has its own small share of connections (one account's burst cannot take them
all), and nothing is retried that might have been done (a read timeout on a create is
reported, not repeated: Twilio has no idempotency key).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

from humanwire.errors import parse_retry_after

from ...telemetry import Metrics

__all__ = ["TwilioAPIError", "TwilioREST"]

logger = logging.getLogger("humanwire.twilio")

API_VERSION = "2010-04-01"
DEFAULT_TIMEOUT = 10.0
_PER_ACCOUNT = 8
"""REST requests one account may have in flight at once."""
_RETRIES = 2
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_RETRY_CREATE_STATUSES = frozenset({429, 503})
"""A create is repeated only when Twilio said it did nothing (too many requests, or
unavailable); after another 5xx a message or call may exist, so it is reported."""

Params = Sequence[tuple[str, str]] | Mapping[str, str]


@dataclass
class TwilioAPIError(Exception):
    """Twilio refused or failed a request. ``code`` is Twilio's error code (21211, …)
    when it gave one; ``status`` 0 means no answer (connection error or timeout)."""

    status: int
    code: int | None
    message: str
    retry_after: float | None = None

    def __str__(self) -> str:
        code = f" {self.code}" if self.code is not None else ""
        return f"Twilio{code}: {self.message} (HTTP {self.status})"


class TwilioREST:
    def __init__(
        self,
        account_sid: str,
        auth_token: str,
        api_base: str = "https://api.twilio.com",
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.account_sid = account_sid
        self._metrics = metrics or Metrics()
        self._client = httpx.AsyncClient(
            base_url=f"{api_base.rstrip('/')}/{API_VERSION}/Accounts/{account_sid}",
            auth=(account_sid, auth_token),
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            transport=transport,
            headers={"User-Agent": "humanwire"},
        )
        self._shares: dict[str, asyncio.Semaphore] = {}

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- operations ---------------------------------------------------------------
    async def create_message(self, params: Params, *, account: str = "") -> dict[str, Any]:
        return await self._call(
            "messages.create", "POST", "/Messages.json", params, account=account, create=True
        )

    async def create_call(self, params: Params, *, account: str = "") -> dict[str, Any]:
        return await self._call(
            "calls.create", "POST", "/Calls.json", params, account=account, create=True
        )

    async def update_call(self, sid: str, params: Params) -> dict[str, Any]:
        return await self._call("calls.update", "POST", f"/Calls/{sid}.json", params)

    async def incoming_numbers(self, phone_number: str) -> list[dict[str, Any]]:
        page = await self._call(
            "numbers.list", "GET", "/IncomingPhoneNumbers.json", {"PhoneNumber": phone_number}
        )
        numbers = page.get("incoming_phone_numbers") or []
        return [n for n in numbers if isinstance(n, dict)]

    async def incoming_numbers_page(self, size: int) -> list[dict[str, Any]]:
        page = await self._call(
            "numbers.list", "GET", "/IncomingPhoneNumbers.json", {"PageSize": str(size)}
        )
        numbers = page.get("incoming_phone_numbers") or []
        return [n for n in numbers if isinstance(n, dict)]

    async def update_number(self, sid: str, params: Params) -> dict[str, Any]:
        return await self._call(
            "numbers.update", "POST", f"/IncomingPhoneNumbers/{sid}.json", params
        )

    async def buy_number(self, params: Params) -> dict[str, Any]:
        return await self._call(
            "numbers.buy", "POST", "/IncomingPhoneNumbers.json", params, create=True
        )

    async def release_number(self, sid: str) -> None:
        await self._call("numbers.release", "DELETE", f"/IncomingPhoneNumbers/{sid}.json", None)

    async def available_local(self, country: str, params: Params) -> list[dict[str, Any]]:
        page = await self._call(
            "numbers.available", "GET", f"/AvailablePhoneNumbers/{country}/Local.json", params
        )
        numbers = page.get("available_phone_numbers") or []
        return [n for n in numbers if isinstance(n, dict)]

    # -- the one request path -------------------------------------------------------
    async def _call(
        self,
        operation: str,
        method: str,
        path: str,
        params: Params | None,
        *,
        account: str = "",
        create: bool = False,
    ) -> dict[str, Any]:
        """One request, retried (with Twilio's ``Retry-After`` or a short back-off) only
        when Twilio answered that it did nothing (429, 5xx) or the connection was never
        made; a timeout after sending a create is not repeated."""
        share = self._shares.get(account)
        if share is None:
            share = self._shares[account] = asyncio.Semaphore(_PER_ACCOUNT)
        items = list(params.items()) if isinstance(params, Mapping) else list(params or [])
        async with share:
            for attempt in range(_RETRIES + 1):
                try:
                    response = await self._request(operation, method, path, items)
                except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                    error = TwilioAPIError(
                        0, None, f"could not reach Twilio ({type(exc).__name__})"
                    )
                except httpx.TimeoutException:
                    raise TwilioAPIError(0, None, "Twilio did not answer in time") from None
                except httpx.HTTPError as exc:
                    if create:
                        raise TwilioAPIError(
                            0, None, f"Twilio request failed ({type(exc).__name__})"
                        ) from None
                    error = TwilioAPIError(0, None, f"Twilio request failed ({type(exc).__name__})")
                else:
                    if response.is_success:
                        if method == "DELETE" or not response.content:
                            return {}
                        body = response.json()
                        return body if isinstance(body, dict) else {}
                    error = _error(response)
                    retryable = _RETRY_CREATE_STATUSES if create else _RETRY_STATUSES
                    if response.status_code not in retryable:
                        raise error
                if attempt == _RETRIES:
                    raise error
                delay = error.retry_after if error.retry_after is not None else 0.25 * 2**attempt
                if delay > 2.0:  # a long wait is the caller's (502 with Retry-After)
                    raise error
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _request(
        self, operation: str, method: str, path: str, items: list[tuple[str, str]]
    ) -> httpx.Response:
        """One HTTP request, timed for ``humanwire_provider_request_seconds``."""
        started = time.perf_counter()
        error: str | None = "error"  # unless it answers or fails in a known way
        try:
            if method == "GET":
                response = await self._client.get(path, params=urlencode(items))
            elif method == "DELETE":
                response = await self._client.delete(path)
            else:
                response = await self._client.post(path, data=dict_or_list(items))
            error = None if response.is_success else f"http_{response.status_code}"
            return response
        except httpx.TimeoutException:
            error = "timeout"
            raise
        except httpx.HTTPError:
            error = "connection"
            raise
        finally:
            self._metrics.provider_request(
                "twilio", operation, time.perf_counter() - started, error
            )


def dict_or_list(items: list[tuple[str, str]]) -> Any:
    """httpx takes repeated keys as a dict of lists (``StatusCallbackEvent``)."""
    data: dict[str, Any] = {}
    for key, value in items:
        if key in data:
            existing = data[key]
            data[key] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            data[key] = value
    return data


def _error(response: httpx.Response) -> TwilioAPIError:
    code: int | None = None
    message = response.reason_phrase or "error"
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        raw = body.get("code")
        code = raw if isinstance(raw, int) else None
        message = str(body.get("message") or message)
    return TwilioAPIError(
        response.status_code,
        code,
        message,
        parse_retry_after(response.headers.get("Retry-After")),
    )
