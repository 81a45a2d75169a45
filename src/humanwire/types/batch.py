"""``POST /batch``: many sends in one request (the multiplexing client's path)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ._base import IDEMPOTENCY_KEY, RequestModel, ResponseModel, schema_pattern

__all__ = ["MAX_BATCH_ITEMS", "BatchItem", "BatchItemResponse", "BatchRequest", "BatchResponse"]

MAX_BATCH_ITEMS = 100


class BatchItem(RequestModel):
    """One send, as it would be POSTed alone (with ``Prefer: respond-async``)."""

    path: str = Field(
        min_length=1,
        max_length=200,
        description="The send's path: `/messages/sms`, `/messages/{channel_id}`, `/forms/slack`…",
    )
    idempotency_key: (
        Annotated[str, Field(json_schema_extra={"pattern": schema_pattern(IDEMPOTENCY_KEY)})] | None
    ) = Field(default=None, description="The send's own `Idempotency-Key` (recommended).")
    body: dict[str, Any] = Field(description="The send's JSON body.")


class BatchRequest(RequestModel):
    requests: list[BatchItem] = Field(min_length=1, max_length=MAX_BATCH_ITEMS)


class BatchItemResponse(ResponseModel):
    """What the send would have answered alone: 202 with the no-wait body while it holds
    (its answer comes on the outcome stream as ``wait.ended``), its answer when it did not
    hold, or its error in the usual shape."""

    status: int
    headers: dict[str, str] = Field(default_factory=dict)
    body: dict[str, Any] | None = None


class BatchResponse(ResponseModel):
    responses: list[BatchItemResponse]
    """One per request, in order."""
