"""Defaults of the client: timeouts, retries, header and environment names."""

from __future__ import annotations

from humanwire.types import MAX_STATUS_WAIT, PHONE_CALL_LIMIT_SECONDS

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "BATCHES_AT_ONCE",
    "BATCH_MAX_BYTES",
    "BATCH_MAX_ITEMS",
    "CALL_END_READ_TIMEOUT",
    "CHANNEL_MESSAGE_READ_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_READ_TIMEOUT",
    "IDEMPOTENCY_KEY_HEADER",
    "MAX_RETRY_AFTER",
    "MAX_STATUS_WAIT",
    "MAX_WAIT_TIME",
    "MIN_POLL_INTERVAL",
    "MULTIPLEXED_SENDS_AT_ONCE",
    "MULTIPLEX_WAITS_AFTER",
    "PHONE_CALL_READ_TIMEOUT",
    "RETRY_INITIAL_DELAY",
    "RETRY_MAX_DELAY",
    "WAIT_MARGIN",
]

API_KEY_ENV = "HUMANWIRE_API_KEY"
BASE_URL_ENV = "HUMANWIRE_BASE_URL"

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 30.0
"""Read timeout of a request that asks the service to hold nothing open."""

WAIT_MARGIN = 15.0
"""Added to the wait a request asks for, so the service answers before the client gives up."""

MAX_WAIT_TIME = 600.0
"""Largest ``waitTime`` the service accepts."""

CALL_END_READ_TIMEOUT = MAX_WAIT_TIME + WAIT_MARGIN
"""``waitForCallEnd``: a call lasts until the callee ends it, so allow the longest wait."""

PHONE_CALL_READ_TIMEOUT = PHONE_CALL_LIMIT_SECONDS + WAIT_MARGIN
"""``/phone/call`` is held at most five minutes, then the service answers 504 ``timeout``."""

CHANNEL_MESSAGE_READ_TIMEOUT = MAX_WAIT_TIME + WAIT_MARGIN
"""A channel card's wait is stored in the service, unknown to the client: allow the longest."""

DEFAULT_MAX_RETRIES = 2
RETRY_INITIAL_DELAY = 0.5
"""Upper bound of the first back-off (full jitter draws from 0 to it); doubles per retry."""
RETRY_MAX_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
"""A 429 asking to wait longer than this is raised instead of slept through."""

MIN_POLL_INTERVAL = 1.0
"""``interactions.wait``: pause between polls when a server answers a long-poll early."""

MULTIPLEX_WAITS_AFTER = 4
"""Past this many held sends in flight, a client asks for 202s (``Prefer: respond-async``)
and reads the answers from the account's outcome stream: any number of waits over a
handful of connections (``humanwire._outcomes``)."""
MULTIPLEXED_SENDS_AT_ONCE = 16
"""Sends answered 202 are short: this many at once keep the service busy, the rest wait
in the client (not in httpx's pool, whose cost grows with its queue). Measured at 10,000
asks (benchmarks/bench_waits.py, one quiet machine, same hour): 8 at once leaves the
service waiting (156 sends/s), 16 is fastest (283), 32 and 64 cost the client more CPU
per send (httpcore polls every idle connection per request, and past its 20 kept alive
it closes and reopens them): 260 and 188."""

SHORT_REQUESTS_AT_ONCE = 20
"""Requests that hold nothing (no ``wait``: a send answered at once, an approval created,
a read, a consume) in flight at once from one async client; the rest wait in the client,
in order, and their timeouts start when they go out. httpx's default pool keeps 20
connections alive (past that it closes and reopens them), and a request queued in the
pool spends its pool timeout there: a gather of 1,000 ``approvals.create`` on a busy
service failed with ``APITimeoutError`` before this gate."""

BATCH_MAX_ITEMS = 100
"""Multiplexed sends (``/messages/…``, ``/forms/…``) go out together in ``POST /batch``,
up to this many (the service's own limit) in one request (``humanwire._batch``)."""
BATCH_MAX_BYTES = 512 * 1024
"""A batch's body stays under this (half the service's default ``max_body_bytes``)."""
BATCHES_AT_ONCE = 4
"""Batches in flight at once; meanwhile the next one fills."""
