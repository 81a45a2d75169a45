"""``GET /events`` (long-poll) and ``GET /events/stream`` (server-sent events): the
account's outcome stream (``humanwire.types.outcomes``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from pydantic import TypeAdapter
from starlette.responses import StreamingResponse

from humanwire.types import OutcomePage
from humanwire.types.rules import schema_pattern

from ..engine.events import CURSOR, EVENT_TYPES, PassedOver, parse_cursor, parse_event_type
from ._api import ApiCall, HeaderParam, Operation, Payload, QueryParam, query_wait

__all__ = ["operations"]

KEEPALIVE = 15.0
"""Seconds of quiet after which the stream sends a comment line."""

_CURSOR_SCHEMA = {"type": "string", "pattern": schema_pattern(CURSOR)}
_AFTER = QueryParam(
    "after",
    "An event id from an earlier answer: the events that followed it. Left out: from now.",
    _CURSOR_SCHEMA,
)
_LAST_EVENT_ID = HeaderParam(
    "Last-Event-ID",
    "Sent by a reconnecting EventSource: the events after this id (before `after`).",
    _CURSOR_SCHEMA,
)


_EVENT_TYPE = QueryParam(
    "eventType",
    "Only the events of this type (`wait.ended`: the answers of respond-async sends; "
    "`interaction.ended`). Left out: all of them.",
    {"type": "string", "enum": list(EVENT_TYPES)},
)


async def _events(call: ApiCall) -> Payload:
    after = parse_cursor(call.query.get("after"))
    only = parse_event_type(call.query.get("eventType"))
    return await call.engine.events.page(call.account, after, query_wait(call), only)


async def _stream(call: ApiCall) -> Payload:
    # An EventSource reconnecting sends Last-Event-ID; ?after= is for the first connect.
    resume = call.request.headers.get("last-event-id")
    if resume is not None:
        after = parse_cursor(resume, "Last-Event-ID")
    else:
        after = parse_cursor(call.query.get("after"))
    only = parse_event_type(call.query.get("eventType"))
    if after is None:
        after = await call.engine.store.last_outcome_id()
    events = call.engine.events.stream(call.account, after, KEEPALIVE, only)

    async def lines() -> AsyncIterator[str]:
        yield "retry: 1000\n: connected\n\n"
        async for event in events:
            if event is None:
                yield ": keepalive\n\n"
                continue
            if isinstance(event, PassedOver):
                # No data: nothing is dispatched, but Last-Event-ID moves past the
                # events this reader's eventType left out.
                yield f": keepalive\nid: {event.cursor}\n\n"
                continue
            data = event.model_dump_json(by_alias=True, exclude_none=True)
            yield f"id: {event.id}\nevent: {event.event_type}\ndata: {data}\n\n"

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(lines(), media_type="text/event-stream", headers=headers)


def operations() -> list[Operation]:
    return [
        Operation(
            "GET",
            "/events",
            _events,
            operation_id="listEvents",
            summary="The account's outcome events (long-poll)",
            description="`interaction.ended` for every interaction that ends, `wait.ended` "
            "for every send made with `Prefer: respond-async` once its wait is over (its "
            "`response` is the held answer). In order, kept at least 24 hours. `?wait=N` "
            "holds up to N seconds for the first one; `cursor` continues (past the "
            "events `eventType` left out, too).",
            tag="interactions",
            response=TypeAdapter(OutcomePage),
            query=(
                _AFTER,
                QueryParam(
                    "wait",
                    "Seconds to hold for an event (0 to 60; 0 holds nothing).",
                    {"type": "number", "minimum": 0, "maximum": 60},
                ),
                _EVENT_TYPE,
            ),
        ),
        Operation(
            "GET",
            "/events/stream",
            _stream,
            operation_id="streamEvents",
            summary="The account's outcome events (server-sent events)",
            description="The events of `GET /events` as they happen (`id:` is the cursor; "
            "a reconnect with `Last-Event-ID` resumes after it; a comment every 15 s).",
            tag="interactions",
            query=(_AFTER, _EVENT_TYPE),
            headers=(_LAST_EVENT_ID,),
            stream=True,
        ),
    ]
