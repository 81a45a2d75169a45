"""The service's tunables: ``[limits]``, ``[spam]``, ``[webhooks]``, ``[calls]``, ``[inbox]``
and ``[http]``, and :data:`SERVICE_CONFIG_FIELDS`, which maps them onto
:class:`ServiceConfig`.
"""

from __future__ import annotations

from typing import Annotated

from ...config import (
    ServiceConfig,
)
from .checks import _about, _count, _seconds, _Strict

__all__ = [
    "SERVICE_CONFIG_FIELDS",
    "CallsSettings",
    "HttpSettings",
    "InboxSettings",
    "LimitsSettings",
    "SpamSettings",
    "WebhooksSettings",
]

SERVICE_CONFIG_FIELDS = {
    "replica_lease": "replica_lease",
    "db_pool_size": "db_pool_size",
    "unavailable_retry_after": "unavailable_retry_after",
    "limits.rate_limit_requests": "rate_limit_requests",
    "limits.rate_limit_window": "rate_limit_window",
    "limits.max_body_bytes": "max_body_bytes",
    "limits.max_status_wait": "max_status_wait",
    "limits.idempotency_ttl": "idempotency_ttl",
    "spam.recipients": "spam_recipients",
    "spam.window": "spam_window",
    "webhooks.timeout": "webhook_timeout",
    "webhooks.retry_base": "webhook_retry_base",
    "webhooks.max_attempts": "webhook_max_attempts",
    "webhooks.concurrency": "webhook_concurrency",
    "calls.phone_call_limit": "phone_call_limit",
    "calls.call_wait_limit": "call_wait_limit",
    "inbox.session_lifetime": "inbox_session_lifetime",
    "inbox.session_idle": "inbox_session_idle",
    "http.head_timeout": "head_timeout",
    "http.body_timeout": "body_timeout",
    "http.max_connections_per_address": "max_connections_per_address",
    "audit.checkpoint_every": "audit_checkpoint_every",
}
"""Dotted key → the :class:`ServiceConfig` field it sets, as it is (a new tunable is a
field in the model and a line here)."""


class LimitsSettings(_Strict):
    """Per-account request limits and request sizes."""

    rate_limit_requests: Annotated[
        int,
        _count(1, 1_000_000),
        _about(
            "Requests an account may make per `rate_limit_window`; past it: 429 `rate_limited` "
            "with `Retry-After`."
        ),
    ] = ServiceConfig.rate_limit_requests
    rate_limit_window: Annotated[
        float, _seconds(86_400), _about("The window the rate limit counts requests in.")
    ] = ServiceConfig.rate_limit_window
    max_body_bytes: Annotated[
        int,
        _count(1024, 1 << 30),
        _about("Largest request body in bytes; past it: 413 `payload_too_large`."),
    ] = ServiceConfig.max_body_bytes
    max_status_wait: Annotated[
        float,
        _seconds(3600),
        _about(
            "Longest `?wait=` a status or events long-poll may hold (a larger `wait` is a 400)."
        ),
    ] = ServiceConfig.max_status_wait
    idempotency_ttl: Annotated[
        float,
        _seconds(30 * 86_400, low=60),
        _about(
            "How long an `Idempotency-Key` is remembered: a retry within it replays the first "
            "answer."
        ),
    ] = ServiceConfig.idempotency_ttl


class SpamSettings(_Strict):
    """The spam guard: the same text to many recipients suspends the account."""

    recipients: Annotated[
        int,
        _count(2, 1_000_000),
        _about(
            "The same text sent to this many distinct recipients within `window` suspends the "
            "account (403 `account_suspended`)."
        ),
    ] = ServiceConfig.spam_recipients
    window: Annotated[
        float, _seconds(30 * 86_400), _about("The window the spam guard counts recipients in.")
    ] = ServiceConfig.spam_window


class WebhooksSettings(_Strict):
    """Delivery of webhook events to the accounts' endpoints."""

    timeout: Annotated[
        float, _seconds(300), _about("Seconds a webhook endpoint has to answer one delivery.")
    ] = ServiceConfig.webhook_timeout
    retry_base: Annotated[
        float,
        _seconds(3600),
        _about("Delay before the first retry of a failed delivery; it doubles with each try."),
    ] = ServiceConfig.webhook_retry_base
    max_attempts: Annotated[
        int, _count(1, 100), _about("Tries of one delivery before it is given up.")
    ] = ServiceConfig.webhook_max_attempts
    concurrency: Annotated[
        int, _count(1, 10_000), _about("Deliveries in flight at once; the rest wait in the outbox.")
    ] = ServiceConfig.webhook_concurrency


class CallsSettings(_Strict):
    """How long call requests are held."""

    phone_call_limit: Annotated[
        float,
        _seconds(3600),
        _about(
            "How long `POST /phone/call` holds before answering 504 `timeout` (the spec's 5 "
            "minutes)."
        ),
    ] = ServiceConfig.phone_call_limit
    call_wait_limit: Annotated[
        float,
        _seconds(86_400),
        _about(
            "How long `POST /calls` with `waitForCallEnd` holds before returning the call "
            "`pending`."
        ),
    ] = ServiceConfig.call_wait_limit


class InboxSettings(_Strict):
    """How long a login to the inbox lasts."""

    session_lifetime: Annotated[
        float,
        _seconds(30 * 86_400, low=60),
        _about(
            "An inbox login ends this long after it was made, however active (then the login "
            "page asks for the API key again)."
        ),
    ] = ServiceConfig.inbox_session_lifetime
    session_idle: Annotated[
        float,
        _seconds(30 * 86_400, low=60),
        _about(
            "An inbox login unused this long ends (an open inbox page keeps it in use); "
            "logging out or rotating the key ends it at once."
        ),
    ] = ServiceConfig.inbox_session_idle


class HttpSettings(_Strict):
    """The service's connections: how long a request may take to arrive, how many
    connections one client address may hold (``humanwire.server.http.middleware``)."""

    head_timeout: Annotated[
        float,
        _seconds(3600),
        _about(
            "Seconds a client has to send a request's head (from the connection's start; on a "
            "kept-alive connection, from the request's first byte); past it the connection is "
            "closed. Never limits the answer: held requests and event streams go on."
        ),
    ] = ServiceConfig.head_timeout
    body_timeout: Annotated[
        float,
        _seconds(3600),
        _about(
            "Seconds a client has to send a request's body once its head is in; past it the "
            "connection is closed."
        ),
    ] = ServiceConfig.body_timeout
    max_connections_per_address: Annotated[
        int,
        _count(0, 1_000_000),
        _about(
            "Connections one client address (an IPv6 /64) may hold open; past it a new one is "
            "answered 429 `rate_limited` and closed. Counted by the TCP peer; a peer in "
            "`trusted_proxies` is not bounded (a proxy bounds its own clients). `0`: no bound."
        ),
    ] = ServiceConfig.max_connections_per_address
