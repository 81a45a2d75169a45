"""The outcome hub asks the stream for ``wait.ended`` only (the events it uses); a
service older than the ``eventType`` filter refuses it (400 naming it), and the hub asks
again without it and passes the rest over itself. (The filter itself, on the real
service: tests/integration/test_e2e_events.py.)"""

from __future__ import annotations

import asyncio
import json

import httpx

from humanwire._outcomes import AsyncOutcomeHub


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
