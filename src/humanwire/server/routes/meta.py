"""``GET /healthz``, ``GET /readyz`` and ``GET /openapi.json``: the endpoints that need
no key."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import TypeAdapter
from starlette.responses import Response

from humanwire.types import ResponseModel

from ..http.health import ReadinessProbe
from ._api import ApiCall, Operation, Payload, encode

__all__ = ["Health", "Readiness", "ReadinessCheck", "operations"]


class Health(ResponseModel):
    status: Literal["ok"] = "ok"


class ReadinessCheck(ResponseModel):
    ok: bool
    detail: str


class Readiness(ResponseModel):
    status: Literal["ready", "not_ready"]
    checks: dict[str, ReadinessCheck]
    """``accepting`` (not stopping), ``database`` (it answered a query, and after a
    write failed, a test write succeeded),
    ``migrations`` (its schema is this code's), and per real provider (``twilio``,
    ``slack``) whether its credentials were accepted at start."""


async def _healthz(call: ApiCall) -> Payload:
    return Health()


async def _readyz(call: ApiCall) -> Payload:
    probe: ReadinessProbe = call.request.app.state.readiness
    checks = await probe.checks()
    ready = all(check.ok for check in checks.values())
    body = Readiness(
        status="ready" if ready else "not_ready",
        checks={name: ReadinessCheck(ok=c.ok, detail=c.detail) for name, c in checks.items()},
    )
    headers = {"Cache-Control": "no-store"}
    if not ready:
        headers["Retry-After"] = f"{max(1, round(call.config.unavailable_retry_after))}"
    return Response(encode(body), 200 if ready else 503, headers, "application/json")


async def _openapi(call: ApiCall) -> Payload:
    document: dict[str, Any] = call.request.app.state.openapi
    return document


def operations() -> list[Operation]:
    return [
        Operation(
            "GET",
            "/healthz",
            _healthz,
            operation_id="healthz",
            summary="Liveness: the process answers (503 once it is stopping)",
            tag="service",
            response=TypeAdapter(Health),
            auth=False,
        ),
        Operation(
            "GET",
            "/readyz",
            _readyz,
            operation_id="readyz",
            summary="Readiness: the database, its schema and the providers' credentials",
            description="200 when every check passes; 503 (with `Retry-After`) naming the "
            "failing check otherwise, and while the service stops. `/healthz` only says the "
            "process answers.",
            tag="service",
            response=TypeAdapter(Readiness),
            unavailable_body=TypeAdapter(Readiness),
            auth=False,
        ),
        Operation(
            "GET",
            "/openapi.json",
            _openapi,
            operation_id="openapi",
            summary="This document",
            tag="service",
            response=TypeAdapter(dict[str, Any]),
            auth=False,
        ),
    ]
