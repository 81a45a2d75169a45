"""The Prometheus side of :class:`humanwire.server.http.middleware.Metrics` (the ``metrics``
extra). Imported only when ``prometheus-client`` is installed, by the engine that uses
it; every engine has its own ``CollectorRegistry``, never the global default one.

Labelled children are looked up once per label set and kept (``.labels()`` validates
and locks on every call); the gauges (held waits, open windows, outbox depth) are read
from the engine when scraped, so nothing is counted on the hot path for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from . import GaugeSource, Metrics

__all__ = ["PrometheusMetrics"]

ANSWER_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600)
"""Seconds from an interaction's start to the human's answer: seconds to a day."""
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class _EngineGauges(Collector):
    """Read at scrape time (on the engine's loop: ``/metrics`` runs there)."""

    def __init__(self, engine: GaugeSource) -> None:
        self._engine = engine

    def collect(self) -> Iterator[Metric]:
        engine = self._engine
        yield GaugeMetricFamily(
            "humanwire_held_waits",
            "Requests held open right now (waiting for a reply, a submission, a call end).",
            value=engine.held_waits,
        )
        yield GaugeMetricFamily(
            "humanwire_open_windows",
            "Interactions with an armed window timer on this service.",
            value=engine.open_windows,
        )
        yield GaugeMetricFamily(
            "humanwire_webhook_outbox_depth",
            "Webhook deliveries waiting in the outbox (pending rows of the database).",
            value=engine.outbox_depth_read,
        )


class PrometheusMetrics(Metrics):
    enabled = True

    def __init__(self, engine: GaugeSource) -> None:
        self.registry = registry = CollectorRegistry()
        registry.register(_EngineGauges(engine))
        self._opened = Counter(
            "humanwire_interactions_opened",
            "Interactions opened (sends, and inbound calls).",
            ("kind", "channel"),
            registry=registry,
        )
        self._sent = Counter(
            "humanwire_sends",
            "Sends handed to a provider, by outcome: ok, unreachable (the recipient "
            "cannot be reached), provider_error, error.",
            ("kind", "channel", "outcome"),
            registry=registry,
        )
        self._ended = Counter(
            "humanwire_interactions_ended",
            "Interactions ended, by outcome: answered, no_response, failed, undelivered, "
            "timeout, and a call's completed / no_answer / transferred.",
            ("kind", "channel", "outcome"),
            registry=registry,
        )
        self._replies = Counter(
            "humanwire_replies",
            "Texts from humans (sms, whatsapp, slack); matched: it answered an interaction.",
            ("channel", "matched"),
            registry=registry,
        )
        self._answer = Histogram(
            "humanwire_time_to_answer_seconds",
            "Seconds from an interaction's start to the human's answer (reply, "
            "submission, answered call).",
            ("kind", "channel"),
            buckets=ANSWER_BUCKETS,
            registry=registry,
        )
        self._webhooks = Counter(
            "humanwire_webhook_attempts",
            "Webhook delivery attempts, by result: delivered, retry (failed, tried again "
            "later), failed (failed, no attempts left), cancelled (webhook deleted).",
            ("result",),
            registry=registry,
        )
        self._webhook_seconds = Histogram(
            "humanwire_webhook_attempt_seconds",
            "Seconds one webhook delivery attempt took.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self._provider_seconds = Histogram(
            "humanwire_provider_request_seconds",
            "Seconds one request to a provider's API took (Twilio, Slack).",
            ("provider", "operation"),
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self._provider_errors = Counter(
            "humanwire_provider_errors",
            "Provider API requests that failed, by reason (http_<status>, timeout, "
            "connection, or Slack's error code).",
            ("provider", "operation", "reason"),
            registry=registry,
        )
        self._http = Counter(
            "humanwire_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ("method", "route", "status"),
            registry=registry,
        )
        self._http_seconds = Histogram(
            "humanwire_http_request_seconds",
            "Seconds from a request's arrival to the end of its answer (held sends and "
            "streams included).",
            ("method", "route"),
            buckets=(*LATENCY_BUCKETS, 120, 300, 600, 3600),
            registry=registry,
        )
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def opened(self, kind: str, channel: str) -> None:
        self._child(self._opened, kind, channel).inc()

    def sent(self, kind: str, channel: str, outcome: str) -> None:
        self._child(self._sent, kind, channel, outcome).inc()

    def ended(self, kind: str, channel: str, outcome: str) -> None:
        self._child(self._ended, kind, channel, outcome).inc()

    def answered(self, kind: str, channel: str, seconds: float) -> None:
        self._child(self._answer, kind, channel).observe(max(0.0, seconds))

    def reply(self, channel: str, matched: bool) -> None:
        self._child(self._replies, channel, "true" if matched else "false").inc()

    def webhook_attempt(self, result: str, seconds: float) -> None:
        self._child(self._webhooks, result).inc()
        self._webhook_seconds.observe(seconds)

    def provider_request(
        self, provider: str, operation: str, seconds: float, error: str | None
    ) -> None:
        self._child(self._provider_seconds, provider, operation).observe(seconds)
        if error is not None:
            self._child(self._provider_errors, provider, operation, error).inc()

    def http_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._child(self._http, method, route, str(status)).inc()
        self._child(self._http_seconds, method, route).observe(seconds)

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
