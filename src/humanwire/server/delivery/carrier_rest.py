"""What the carriers' REST clients share (Twilio's and Telnyx's): one request path with its
timeouts, per-account shares of connections, retries and metrics, over httpx.

Why not the carriers' SDKs: the service already runs httpx with its own timeouts and
metrics; the request shapes are small and fixed, and each carrier's contract fake checks
every one against the carrier's published description.

A slow or failing carrier never holds the service up: every request has a timeout, each
account has its own small share of connections (one account's burst cannot take them
all), and nothing is retried that might have been done: a create is repeated only when
the carrier said it did nothing (429, 503) or the connection was never made; a timeout
after sending is reported, not repeated (neither carrier takes an idempotency key).

A carrier's client (``TwilioREST``, ``TelnyxREST``) keeps only what differs: its
authentication and base URL, how a request's payload is sent (``_send``), and the shape
of its error bodies (``_refusal``).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import httpx

from ..telemetry import Metrics

__all__ = ["DEFAULT_TIMEOUT", "CarrierAPIError", "CarrierREST", "NumberedAPIError"]

DEFAULT_TIMEOUT = 10.0
_PER_ACCOUNT = 8
"""REST requests one account may have in flight at once."""
_RETRIES = 2
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_RETRY_CREATE_STATUSES = frozenset({429, 503})
"""A create is repeated only when the carrier said it did nothing (too many requests, or
unavailable); after another 5xx a message or call may exist, so it is reported."""
_LONGEST_WAIT = 2.0
"""A longer ``Retry-After`` is the caller's to wait (a 502 asking for minutes)."""


class CarrierAPIError(Exception):
    """A carrier refused or failed a request; ``status`` 0 means no answer (connection
    error or timeout). Each carrier's error (``TwilioAPIError``…) is one, with its code."""

    status: int
    message: str
    retry_after: float | None


@dataclass
class NumberedAPIError(CarrierAPIError):
    """A carrier's error whose ``code`` is a number (Twilio's 21211, Meta's 131026);
    ``label`` names the carrier in the message."""

    label: ClassVar[str] = "carrier"

    status: int
    code: int | None
    message: str
    retry_after: float | None = None

    def __str__(self) -> str:
        code = f" {self.code}" if self.code is not None else ""
        return f"{self.label}{code}: {self.message} (HTTP {self.status})"


E = TypeVar("E", bound=CarrierAPIError)


class CarrierREST(ABC, Generic[E]):
    """A carrier's REST API: ``_call`` is the one request path."""

    provider: ClassVar[str]
    """The carrier in metrics: ``twilio``."""
    label: ClassVar[str]
    """The carrier in messages: ``Twilio``."""

    def __init__(
        self,
        *,
        base_url: str,
        timeout: float,
        transport: httpx.AsyncBaseTransport | None,
        metrics: Metrics | None,
        headers: dict[str, str],
        auth: tuple[str, str] | None = None,
    ) -> None:
        self._metrics = metrics or Metrics()
        self._client = httpx.AsyncClient(
            base_url=base_url,
            auth=auth,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            transport=transport,
            headers={**headers, "User-Agent": "humanwire"},
        )
        self._shares: dict[str, asyncio.Semaphore] = {}

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- what a carrier says ------------------------------------------------------------
    @abstractmethod
    async def _send(self, method: str, path: str, payload: Any) -> httpx.Response:
        """One HTTP request with ``payload`` as the carrier takes it (form, query, JSON)."""

    @abstractmethod
    def _refusal(self, response: httpx.Response) -> E:
        """The error of a non-2xx answer, from the carrier's error body."""

    @abstractmethod
    def _no_answer(self, message: str) -> E:
        """The error of a request that got no answer (status 0)."""

    # -- the one request path -------------------------------------------------------------
    async def _call(
        self,
        operation: str,
        method: str,
        path: str,
        payload: Any,
        *,
        account: str = "",
        create: bool = False,
    ) -> dict[str, Any]:
        """One request, retried (with the carrier's ``Retry-After`` or a short back-off)
        only when the carrier answered that it did nothing (429, 5xx; 429 and 503 for a
        create) or the connection was never made; a timeout after sending is not
        repeated. Returns the JSON object answered ({} for none, or a DELETE)."""
        share = self._shares.get(account)
        if share is None:
            share = self._shares[account] = asyncio.Semaphore(_PER_ACCOUNT)
        async with share:
            for attempt in range(_RETRIES + 1):
                try:
                    response = await self._timed(operation, method, path, payload)
                except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                    error = self._no_answer(f"could not reach {self.label} ({type(exc).__name__})")
                except httpx.TimeoutException:
                    raise self._no_answer(f"{self.label} did not answer in time") from None
                except httpx.HTTPError as exc:
                    error = self._no_answer(f"{self.label} request failed ({type(exc).__name__})")
                    if create:  # it may have been sent: not repeated
                        raise error from None
                else:
                    if response.is_success:
                        return _answer(method, response)
                    error = self._refusal(response)
                    retryable = _RETRY_CREATE_STATUSES if create else _RETRY_STATUSES
                    if response.status_code not in retryable:
                        raise error
                if attempt == _RETRIES:
                    raise error
                delay = error.retry_after if error.retry_after is not None else 0.25 * 2**attempt
                if delay > _LONGEST_WAIT:
                    raise error
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _timed(self, operation: str, method: str, path: str, payload: Any) -> httpx.Response:
        """One HTTP request, timed for ``humanwire_provider_request_seconds``."""
        started = time.perf_counter()
        error: str | None = "error"  # unless it answers or fails in a known way
        try:
            response = await self._send(method, path, payload)
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
                self.provider, operation, time.perf_counter() - started, error
            )


def _answer(method: str, response: httpx.Response) -> dict[str, Any]:
    """A 2xx's JSON object: {} for a DELETE, an empty body, or anything but an object (a
    carrier's garbage is not let through as an exception)."""
    if method == "DELETE" or not response.content:
        return {}
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
