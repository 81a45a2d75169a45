"""The outcome hub asks the stream for ``wait.ended`` only (the events it uses); a
service older than the ``eventType`` filter refuses it (400 naming it), and the hub asks
again without it and passes the rest over itself. (The filter itself, on the real
service: tests/integration/test_e2e_events.py.)"""

from __future__ import annotations

import asyncio
import json

import httpx

from humanwire._outcomes import AsyncOutcomeHub, SseParser


def older_service(seen: list[httpx.URL]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        if request.url.path == "/events":
            return httpx.Response(200, json={"events": [], "cursor": "5"})
        if "eventType" in request.url.params:
            error = {"code": "invalid_request", "message": "unknown", "field": "eventType"}
            return httpx.Response(400, json={"error": error})
        events = [
            {"id": "6", "eventType": "interaction.ended", "interactionId": "int_1"},
            {"id": "7", "eventType": "wait.ended", "interactionId": "int_1", "status": 200},
        ]
        body = "".join(f"id: {e['id']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    return httpx.MockTransport(handle)


async def test_an_older_service_refusing_the_filter_is_asked_again_without_it() -> None:
    seen: list[httpx.URL] = []
    async with httpx.AsyncClient(transport=older_service(seen)) as http:
        hub = AsyncOutcomeHub(http, "http://hw.test", {"Authorization": "Bearer k"})
        await hub.start()
        event = await asyncio.wait_for(hub.wait_for("int_1", 5), 5)
        await hub.aclose()
    assert event["eventType"] == "wait.ended" and event["id"] == "7"
    streams = [url for url in seen if url.path == "/events/stream"]
    assert streams[0].params.get("eventType") == "wait.ended"
    assert "eventType" not in streams[1].params and streams[1].params["after"] == "5"
    assert hub.event_type is None


def test_an_id_without_data_moves_only_the_cursor() -> None:
    parser = SseParser()
    lines = [": keepalive", "id: 41", ""]  # the service's keepalive past left-out events
    assert [parser.feed(line) for line in lines] == [None, None, {"id": "41"}]
    assert [parser.feed(line) for line in (": keepalive", "")] == [None, None]
    event = '{"id": "42", "eventType": "wait.ended", "interactionId": "int_1"}'
    lines = ["id: 42", "event: wait.ended", f"data: {event}", ""]
    assert [parser.feed(line) for line in lines][-1] == json.loads(event)


async def test_the_hub_reconnects_past_the_ids_a_keepalive_named() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/events":
            return httpx.Response(200, json={"events": [], "cursor": "5"})
        if len([r for r in seen if r.url.path == "/events/stream"]) == 1:
            # Events 6-9 were left out; then the connection ends (a proxy closed it).
            body = ": connected\n\n: keepalive\nid: 9\n\n"
        else:
            answer = {"id": "10", "eventType": "wait.ended", "interactionId": "int_1"}
            body = f"id: 10\ndata: {json.dumps(answer)}\n\n"
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handle)) as http:
        hub = AsyncOutcomeHub(http, "http://hw.test", {"Authorization": "Bearer k"})
        await hub.start()
        event = await asyncio.wait_for(hub.wait_for("int_1", 5), 5)
        await hub.aclose()
    assert event["id"] == "10"
    first, second = [r for r in seen if r.url.path == "/events/stream"][:2]
    assert first.headers["last-event-id"] == "5"
    assert second.headers["last-event-id"] == "9" and second.url.params["after"] == "9"
