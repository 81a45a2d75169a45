"""``SlackWeb``: Slack's Web API through ``slack_sdk``'s ``AsyncWebClient``, one client per
bot token on one shared aiohttp session.

Slack's own retry handlers are off: a ``chat.postMessage`` whose answer was lost must not
be posted twice, and a 429 is retried here, after Slack's ``Retry-After``, only while the
send is still useful (before the wait window's end, or within ``RATE_LIMIT_BUDGET`` for a
send nobody waits on). Errors come out as ``SlackError`` carrying Slack's error code.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ...telemetry import Metrics

__all__ = ["RATE_LIMIT_BUDGET", "TIMEOUT", "SlackError", "SlackWeb"]

logger = logging.getLogger("humanwire.slack")
sdk_logger = logging.getLogger("humanwire.slack.web")
# slack_sdk logs whole answers at DEBUG, oauth.v2.access's bot token included: its logger
# stays at INFO whatever the root's level (tokens are never logged).
sdk_logger.setLevel(logging.INFO)

TIMEOUT = 10
"""Seconds for one Web API call."""
RATE_LIMIT_BUDGET = 30.0
"""How long a 429 is retried for when the send has no wait window of its own."""


class SlackError(Exception):
    """A Web API call that did not answer ``ok``: ``error`` is Slack's code
    (``channel_not_found``…, ``ratelimited``, ``connection_failed`` when Slack could not
    be reached); ``retry_after`` Slack's ``Retry-After`` of a 429."""

    def __init__(self, method: str, error: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"Slack {method}: {error}")
        self.method = method
        self.error = error
        self.retry_after = retry_after


class SlackWeb:
    def __init__(self, api_base: str, *, metrics: Metrics | None = None) -> None:
        self.api_base = api_base.rstrip("/") + "/"
        self._metrics = metrics or Metrics()
        self._clients: dict[str, Any] = {}
        self._session: Any = None

    def _client(self, token: str) -> Any:
        from slack_sdk.web.async_client import AsyncWebClient

        if self._session is None:
            import aiohttp

            # One pool for every token; the client's default is a session per call.
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT))
        client = self._clients.get(token)
        if client is None:
            client = AsyncWebClient(
                token=token,
                base_url=self.api_base,
                timeout=TIMEOUT,
                session=self._session,
                retry_handlers=[],
                logger=sdk_logger,
            )
            self._clients[token] = client
        return client

    def forget(self, token: str) -> None:
        """Drops the client of a revoked token."""
        self._clients.pop(token, None)

    async def call(
        self,
        method: str,
        token: str | None,
        *,
        deadline: float | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """Calls ``method`` (e.g. ``chat_postMessage``) with ``params``; a 429 is retried
        after its ``Retry-After`` while that ends before ``deadline`` (a monotonic-free
        ``time.time()`` value; None: ``RATE_LIMIT_BUDGET`` from now)."""
        from slack_sdk.errors import SlackApiError, SlackClientError

        if deadline is None:
            deadline = time.time() + RATE_LIMIT_BUDGET
        client = self._client(token or "")
        name = method.replace("_", ".", 1)
        while True:
            started = time.perf_counter()
            try:
                response = await self._timed(name, started, getattr(client, method)(**params))
            except SlackApiError as exc:
                status = exc.response.status_code
                error = str((exc.response.data or {}).get("error") or f"http_{status}")
                if status == 429 or error == "ratelimited":
                    retry_after = _retry_after(exc.response.headers)
                    if time.time() + retry_after < deadline:
                        logger.info("Slack %s rate limited: retrying in %.1f s", name, retry_after)
                        await asyncio.sleep(retry_after)
                        continue
                    raise SlackError(name, "ratelimited", retry_after=retry_after) from None
                raise SlackError(name, error) from None
            except (SlackClientError, OSError, asyncio.TimeoutError) as exc:
                # aiohttp's errors are OSErrors or timeouts; slack_sdk wraps a few.
                raise SlackError(name, f"connection_failed ({type(exc).__name__})") from None
            except Exception as exc:
                if type(exc).__module__.startswith("aiohttp"):
                    raise SlackError(name, f"connection_failed ({type(exc).__name__})") from None
                raise
            return dict(response.data)

    async def _timed(self, name: str, started: float, call: Any) -> Any:
        """Awaits one Web API call, timed for ``humanwire_provider_request_seconds``;
        a failure is counted by Slack's error code (or ``connection``)."""
        from slack_sdk.errors import SlackApiError

        error: str | None = "connection"
        try:
            response = await call
            error = None
            return response
        except SlackApiError as exc:
            data = exc.response.data if isinstance(exc.response.data, dict) else {}
            error = str(data.get("error") or f"http_{exc.response.status_code}")[:64]
            raise
        finally:
            self._metrics.provider_request("slack", name, time.perf_counter() - started, error)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        self._clients.clear()


def _retry_after(headers: Any) -> float:
    value = None
    if headers:
        for key, raw in dict(headers).items():
            if str(key).lower() == "retry-after":
                value = raw
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0
