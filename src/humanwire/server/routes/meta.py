"""``GET /healthz`` and ``GET /openapi.json``: the two endpoints that need no key."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import TypeAdapter

from humanwire.types import ResponseModel

from ._api import ApiCall, Operation, Payload

__all__ = ["Health", "operations"]


class Health(ResponseModel):
    status: Literal["ok"] = "ok"


async def _healthz(call: ApiCall) -> Payload:
    return Health()


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
            summary="Readiness",
            tag="service",
            response=TypeAdapter(Health),
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
