"""The API's endpoints, one module per resource. ``api_operations`` is the table both the
app's routes and the OpenAPI document are built from."""

from __future__ import annotations

from . import (
    approvals,
    batch,
    calls,
    channels,
    events,
    forms,
    interactions,
    messages,
    meta,
    numbers,
    people,
    sandbox,
    telegram,
    webhooks,
)
from ._api import IDEMPOTENCY_HEADER, REPLAYED_HEADER, Operation, authenticate, to_routes

__all__ = [
    "IDEMPOTENCY_HEADER",
    "REPLAYED_HEADER",
    "Operation",
    "api_operations",
    "authenticate",
    "to_routes",
]


def api_operations(*, sandbox_enabled: bool) -> list[Operation]:
    """Every operation, in routing order (fixed paths before the ones with parameters)."""
    table = [
        *meta.operations(),
        *messages.operations(),
        *forms.operations(),
        *calls.operations(),
        *approvals.operations(),
        *people.operations(),
        *interactions.operations(),
        *events.operations(),
        *numbers.operations(),
        *webhooks.operations(),
        *channels.operations(),
        *telegram.operations(),
    ]
    if sandbox_enabled:
        table += sandbox.operations()
    # Fixed paths first: /batch before the parameterized ones.
    return [*batch.operations([op for op in table if op.batchable]), *table]
