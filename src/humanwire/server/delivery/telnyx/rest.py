"""Telnyx's REST API (v2), the few operations the service uses, over httpx with JSON.

Why not ``telnyx.AsyncTelnyx``: the service already runs httpx with its own timeouts,
per-account shares of connections and metrics, as for Twilio; the request shapes are
small and fixed, and the contract fake (``humanwire.testing.telnyx``) checks every one
against the ``telnyx`` package's published request types. A slow or failing Telnyx never
holds the service up: every request has a timeout, and a create that may have been done
(a timeout, a 5xx other than 503) is reported, not repeated.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from humanwire.errors import parse_retry_after

from ...telemetry import Metrics

__all__ = ["TelnyxAPIError", "TelnyxREST"]

DEFAULT_TIMEOUT = 10.0
_PER_ACCOUNT = 8
_RETRIES = 2
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_RETRY_CREATE_STATUSES = frozenset({429, 503})


@dataclass
class TelnyxAPIError(Exception):
    """Telnyx refused or failed a request: ``code`` is the first of Telnyx's
    ``errors[].code`` (``"40310"``…), ``pointer`` its ``source.pointer`` (``/to``);
    ``status`` 0 means no answer."""

    status: int
    code: str | None
    message: str
    retry_after: float | None = None
    pointer: str | None = None

    def __str__(self) -> str:
        code = f" {self.code}" if self.code else ""
        return f"Telnyx{code}: {self.message} (HTTP {self.status})"


class TelnyxREST:
    def __init__(
        self,
        api_key: str,
        api_base: str = "https://api.telnyx.com/v2",
        *,
        account_sid: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.account_sid = account_sid or ""
        self._metrics = metrics or Metrics()
        self._client = httpx.AsyncClient(
            base_url=api_base.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "humanwire"},
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            transport=transport,
        )
        self._shares: dict[str, asyncio.Semaphore] = {}

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- operations -----------------------------------------------------------------
    async def send_message(self, body: Mapping[str, Any], *, account: str = "") -> dict[str, Any]:
        answer = await self._call(
            "messages.send", "POST", "/messages", body, account=account, create=True
        )
        return _data(answer)

    async def phone_numbers(self, phone_number: str | None = None) -> list[dict[str, Any]]:
        query = {"filter[phone_number]": phone_number} if phone_number else {"page[size]": "1"}
        answer = await self._call("numbers.list", "GET", "/phone_numbers", query)
        return [n for n in answer.get("data") or [] if isinstance(n, dict)]

    async def update_number(self, number_id: str, body: Mapping[str, Any]) -> None:
        await self._call("numbers.update", "PATCH", f"/phone_numbers/{quote(number_id)}", body)

    async def update_number_messaging(self, number_id: str, profile_id: str) -> None:
        await self._call(
            "numbers.messaging",
            "PATCH",
            f"/phone_numbers/{quote(number_id)}/messaging",
            {"messaging_profile_id": profile_id},
        )

    async def release_number(self, number_id: str) -> None:
        await self._call("numbers.release", "DELETE", f"/phone_numbers/{quote(number_id)}", None)

    async def available(self, query: Mapping[str, str]) -> list[dict[str, Any]]:
        answer = await self._call("numbers.available", "GET", "/available_phone_numbers", query)
        return [n for n in answer.get("data") or [] if isinstance(n, dict)]

    async def order_number(self, body: Mapping[str, Any]) -> dict[str, Any]:
        answer = await self._call("numbers.buy", "POST", "/number_orders", body, create=True)
        return _data(answer)

    async def create_call(self, body: Mapping[str, Any], *, account: str = "") -> dict[str, Any]:
        path = f"/texml/Accounts/{quote(self.account_sid)}/Calls"
        return await self._call("calls.create", "POST", path, body, account=account, create=True)

    async def update_call(self, call_sid: str, body: Mapping[str, Any]) -> dict[str, Any]:
        path = f"/texml/Accounts/{quote(self.account_sid)}/Calls/{quote(call_sid)}"
        return await self._call("calls.update", "POST", path, body)

    # -- the one request path -------------------------------------------------------
    async def _call(
        self,
        operation: str,
        method: str,
        path: str,
        payload: Mapping[str, Any] | None,
        *,
        account: str = "",
        create: bool = False,
    ) -> dict[str, Any]:
        """One request, retried (with Telnyx's ``Retry-After`` or a short back-off) only
        when Telnyx answered that it did nothing, or the connection was never made."""
        share = self._shares.get(account)
        if share is None:
            share = self._shares[account] = asyncio.Semaphore(_PER_ACCOUNT)
        async with share:
            for attempt in range(_RETRIES + 1):
                try:
                    response = await self._request(operation, method, path, payload)
                except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                    error = TelnyxAPIError(
                        0, None, f"could not reach Telnyx ({type(exc).__name__})"
                    )
                except httpx.TimeoutException:
                    raise TelnyxAPIError(0, None, "Telnyx did not answer in time") from None
                except httpx.HTTPError as exc:
                    error = TelnyxAPIError(0, None, f"Telnyx request failed ({type(exc).__name__})")
                    if create:
                        raise error from None
                else:
                    if response.is_success:
                        try:
                            body = response.json() if response.content else {}
                        except ValueError:
                            body = {}
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
        self, operation: str, method: str, path: str, payload: Mapping[str, Any] | None
    ) -> httpx.Response:
        """One HTTP request, timed for ``humanwire_provider_request_seconds``."""
        started = time.perf_counter()
        error: str | None = "error"
        try:
            if method in ("GET", "DELETE"):
                response = await self._client.request(method, path, params=dict(payload or {}))
            else:
                response = await self._client.request(method, path, json=dict(payload or {}))
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
                "telnyx", operation, time.perf_counter() - started, error
            )


def _data(answer: dict[str, Any]) -> dict[str, Any]:
    data = answer.get("data")
    return data if isinstance(data, dict) else {}


def _error(response: httpx.Response) -> TelnyxAPIError:
    """Telnyx's ``{"errors": [{"code", "title", "detail", "source": {"pointer"}}]}``."""
    code: str | None = None
    pointer: str | None = None
    message = response.reason_phrase or "error"
    try:
        body = response.json()
    except ValueError:
        body = None
    errors = body.get("errors") if isinstance(body, dict) else None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        first = errors[0]
        code = str(first["code"]) if first.get("code") is not None else None
        message = str(first.get("detail") or first.get("title") or message)
        source = first.get("source")
        if isinstance(source, dict) and isinstance(source.get("pointer"), str):
            pointer = source["pointer"]
    return TelnyxAPIError(
        response.status_code,
        code,
        message,
        parse_retry_after(response.headers.get("Retry-After")),
        pointer,
    )
