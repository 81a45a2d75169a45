"""Many waits without a connection each (docs/design.md "Many waits from one client"), on the
service over loopback: ``Prefer: respond-async`` answers 202 at once, the wait goes on,
and its held answer arrives on the account's outcome stream (``GET /events`` long-poll,
``GET /events/stream`` server-sent events) beside ``interaction.ended``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from e2e_support import HUMAN, NO_RESPONSE

from humanwire import HumanWire
from humanwire.testing import RunningService, ScriptedHuman

ASYNC = {"Prefer": "respond-async"}


class Api:
    def __init__(self, base_url: str, key: str) -> None:
        self.http = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        )

    def cursor(self) -> str:
        page = self.http.get("/events", params={"wait": 0})
        assert page.status_code == 200, page.text
        assert page.json()["events"] == []  # "from now": nothing yet
        return str(page.json()["cursor"])

    def events_until(self, after: str, count: int, timeout: float = 15) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while len(found) < count and time.monotonic() < deadline:
            page = self.http.get("/events", params={"after": after, "wait": 5}).json()
            found += page["events"]
            after = page["cursor"]
        return found


@pytest.fixture
def api(humanwire_service: RunningService, humanwire_api_key: str) -> Iterator[Api]:
    client = Api(humanwire_service.base_url, humanwire_api_key)
    yield client
    client.http.close()


def test_a_held_send_answers_202_and_its_answer_comes_as_an_event(
    api: Api, human: ScriptedHuman
) -> None:
    start = api.cursor()
    action = human.reply("yes, ship it")
    started = time.monotonic()
    sent = api.http.post(
        "/messages/sms",
        json={"to": HUMAN, "message": "Ship?", "waitTime": 30, "metadata": {"run": "r1"}},
        headers=ASYNC,
    )
    assert sent.status_code == 202, sent.text
    assert time.monotonic() - started < 5  # not held for the reply
    assert sent.headers["preference-applied"] == "respond-async"
    body = sent.json()
    assert (body["status"], body["metadata"]) == ("pending", {"run": "r1"})
    action.wait()
    events = api.events_until(start, 2)
    kinds = {event["eventType"]: event for event in events}
    assert set(kinds) == {"interaction.ended", "wait.ended"}
    ended, waited = kinds["interaction.ended"], kinds["wait.ended"]
    assert ended["interactionId"] == waited["interactionId"] == body["interactionId"]
    assert ended["result"]["payload"]["body"] == "yes, ship it"
    assert waited["responded"] is True and waited["metadata"] == {"run": "r1"}
    # The held answer itself, exactly as a waiting send would have returned it.
    assert waited["response"]["response"] == "Human response: yes, ship it"
    assert waited["response"]["reply"] == "yes, ship it"
    assert waited["response"]["status"] == "ended" and waited["status"] == 200
    assert [int(e["id"]) for e in events] == sorted(int(e["id"]) for e in events)


def test_a_wait_that_times_out_is_a_wait_ended_with_the_no_response_text(
    api: Api,
) -> None:
    start = api.cursor()
    sent = api.http.post(
        "/messages/sms",
        json={"to": HUMAN, "message": "Anyone?", "waitTime": 1, "followUpTime": 60},
        headers=ASYNC,
    )
    assert sent.status_code == 202
    [waited] = api.events_until(start, 1)
    assert waited["eventType"] == "wait.ended"
    assert waited["responded"] is False
    assert waited["response"]["response"] == NO_RESPONSE
    assert waited["response"]["status"] == "pending"  # the follow-up window listens on


def test_a_send_without_wait_or_a_replay_answers_as_usual(api: Api, human: ScriptedHuman) -> None:
    plain = api.http.post("/messages/sms", json={"to": HUMAN, "message": "FYI"}, headers=ASYNC)
    assert plain.status_code == 200 and "preference-applied" not in plain.headers
    human.reply("ok")
    keyed = {**ASYNC, "Idempotency-Key": "async-1"}
    body = {"to": HUMAN, "message": "Go?", "waitTime": 20}
    first = api.http.post("/messages/sms", json=body, headers=keyed)
    assert first.status_code == 202
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        replay = api.http.post("/messages/sms", json=body, headers=keyed)
        if replay.status_code == 200:
            break
        time.sleep(0.2)
    # Once the wait is over, the same key replays the held answer itself.
    assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
    assert replay.json()["response"] == "Human response: ok"
    assert replay.json()["interactionId"] == first.json()["interactionId"]


def test_a_bad_cursor_or_wait_is_a_400(api: Api) -> None:
    for params, field in (({"after": "abc"}, "after"), ({"wait": 61}, "wait")):
        answer = api.http.get("/events", params=params)
        assert answer.status_code == 400
        assert answer.json()["error"]["field"] == field
    quiet = api.http.get("/events", params={"wait": 0.5})
    assert quiet.status_code == 200 and quiet.json()["events"] == []


def test_a_cursor_is_an_event_id_never_empty(api: Api) -> None:
    # Empty named no event (it read from now, a guess); ² passed isdigit and broke int.
    for bad in ("", "abc", "²", "-1", "1" * 19):
        for path in ("/events", "/events/stream"):
            # A stream that opened would not end: the timeout fails the test instead.
            refused = api.http.get(path, params={"after": bad}, timeout=5)
            assert refused.status_code == 400, (path, bad, refused.text)
            assert refused.json()["error"]["field"] == "after"
    for bad in ("", "abc", "1" * 19):
        refused = api.http.get("/events/stream", headers={"Last-Event-ID": bad}, timeout=5)
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.json()["error"] == {
            "code": "invalid_request",
            "message": "Last-Event-ID must be an event id from an earlier answer",
            "field": "Last-Event-ID",
        }


def read_events(
    response: httpx.Response, count: int, deadline: float | None = None
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    current: dict[str, str] = {}
    for line in response.iter_lines():
        # A keepalive comes every 15 s: a stream that has stopped carrying events fails here.
        assert deadline is None or time.monotonic() < deadline, f"{len(events)} of {count}"
        if line.startswith(("id:", "event:", "data:")):
            name, _, value = line.partition(":")
            current[name] = value.strip()
        elif line == "" and "data" in current:
            event = json.loads(current["data"])
            assert event["id"] == current["id"] and event["eventType"] == current["event"]
            events.append(event)
            current = {}
            if len(events) == count:
                break
    return events


def test_the_stream_delivers_in_order_and_resumes_from_last_event_id(
    api: Api, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    start = api.cursor()
    with api.http.stream("GET", "/events/stream", params={"after": start}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        human.reply("first", delay=0.5)  # after the 202 (a reply first is answered 200)
        sent = api.http.post(
            "/messages/sms", json={"to": HUMAN, "message": "1?", "waitTime": 20}, headers=ASYNC
        )
        assert sent.status_code == 202, sent.text
        first = read_events(stream, 2)
    assert {e["eventType"] for e in first} == {"interaction.ended", "wait.ended"}
    last = max(int(e["id"]) for e in first)
    # While nobody listens, another answer; the reconnect gets it, and nothing twice.
    human.reply("second", delay=0.5)  # after the 202 (a reply first is answered 200)
    sent = api.http.post(
        "/messages/sms", json={"to": HUMAN, "message": "2?", "waitTime": 20}, headers=ASYNC
    )
    assert sent.status_code == 202, sent.text
    api.events_until(str(last), 2)  # both happened
    with api.http.stream("GET", "/events/stream", headers={"Last-Event-ID": str(last)}) as stream:
        second = read_events(stream, 2)
    assert all(int(e["id"]) > last for e in second)
    assert {e["eventType"] for e in second} == {"interaction.ended", "wait.ended"}
    [waited] = [e for e in second if e["eventType"] == "wait.ended"]
    assert waited["response"]["reply"] == "second"


def test_a_filtered_streams_keepalive_moves_last_event_id_past_what_it_left_out(
    api: Api,
    humanwire_client: HumanWire,
    human: ScriptedHuman,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import humanwire.server.routes.events as events_route

    monkeypatch.setattr(events_route, "KEEPALIVE", 0.3)  # the service runs in this process
    start = api.cursor()
    only = {"after": start, "eventType": "wait.ended"}
    with api.http.stream("GET", "/events/stream", params=only) as stream:
        human.reply("no wait.ended for this one")
        held = humanwire_client.messages.sms(message="Held?", to=HUMAN, wait_time=20)
        assert held.responded is True  # answered held: an interaction.ended, no wait.ended
        [ended] = api.events_until(start, 1)
        assert ended["eventType"] == "interaction.ended"
        # The keepalive that follows carries the id left out, with no data to dispatch.
        block: list[str] = []
        for line in stream.iter_lines():
            if line:
                block.append(line)
            elif any(part.startswith("id:") for part in block):
                break
            else:
                block = []
    assert block == [": keepalive", f"id: {ended['id']}"]
    # A reconnect from there starts after it: the next event it gets is the next answer.
    human.reply("then one that waits", delay=0.5)  # after the 202 (a reply first is answered 200)
    sent = api.http.post(
        "/messages/sms", json={"to": HUMAN, "message": "2?", "waitTime": 20}, headers=ASYNC
    )
    assert sent.status_code == 202, sent.text
    resumed = {"Last-Event-ID": ended["id"]}
    with api.http.stream(
        "GET", "/events/stream", params={"eventType": "wait.ended"}, headers=resumed
    ) as stream:
        [waited] = read_events(stream, 1)
    assert waited["eventType"] == "wait.ended"
    assert waited["response"]["reply"] == "then one that waits"
    assert int(waited["id"]) > int(ended["id"])


def test_a_stream_and_a_long_poll_for_wait_ended_only(
    api: Api, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    start = api.cursor()
    only = {"after": start, "eventType": "wait.ended"}
    with api.http.stream("GET", "/events/stream", params=only) as stream:
        for text in ("first", "second"):
            # After the 202: a reply that beats the hold is answered 200 with it (the
            # preference is only a preference), and no wait.ended follows.
            human.reply(text, delay=0.5)
            sent = api.http.post(
                "/messages/sms", json={"to": HUMAN, "message": "?", "waitTime": 20}, headers=ASYNC
            )
            assert sent.status_code == 202, sent.text
        got = read_events(stream, 2, deadline=time.monotonic() + 60)
    # Each answer ended an interaction too: those two were left out, not sent. Both asks
    # went to one number, so which reply answered which (and ended first) may vary.
    assert sorted((e["eventType"], e["response"]["reply"]) for e in got) == [
        ("wait.ended", "first"),
        ("wait.ended", "second"),
    ]
    everything = api.events_until(start, 4)
    assert (
        sorted(e["eventType"] for e in everything) == ["interaction.ended"] * 2 + ["wait.ended"] * 2
    )
    page = api.http.get("/events", params={"after": start, "eventType": "interaction.ended"})
    assert [e["eventType"] for e in page.json()["events"]] == ["interaction.ended"] * 2
    # The cursor passes what the filter left out: the last event read.
    assert page.json()["cursor"] == str(max(int(e["id"]) for e in everything))
    for bad in ("message.received", "", "WAIT.ENDED"):
        refused = api.http.get("/events/stream", params={"eventType": bad})
        assert refused.status_code == 400
        assert refused.json()["error"]["field"] == "eventType"
        assert api.http.get("/events", params={"eventType": bad}).status_code == 400


def test_accounts_never_see_each_others_events(
    api: Api, humanwire_service: RunningService, human: ScriptedHuman
) -> None:
    other = Api(humanwire_service.base_url, humanwire_service.create_account("other-events"))
    theirs = other.cursor()
    start = api.cursor()
    human.reply("mine", delay=0.5)  # after the 202 (a reply first is answered 200)
    sent = api.http.post(
        "/messages/sms", json={"to": HUMAN, "message": "?", "waitTime": 20}, headers=ASYNC
    )
    assert sent.status_code == 202, sent.text
    assert len(api.events_until(start, 2)) == 2
    page = other.http.get("/events", params={"after": theirs, "wait": 1}).json()
    assert page["events"] == []
    assert other.http.get("/events", headers={"Authorization": "Bearer nope"}).status_code == 401
    other.http.close()


def test_an_error_after_the_202_is_the_wait_ended_answer(start_service: Any) -> None:
    """A call that outlives /phone/call's limit answers 504 when held; accepted with a
    202, its wait.ended carries that same error, and the client raises the same type."""
    from humanwire.errors import CallTimeoutError

    service = start_service("limits.db", phone_call_limit=1.0)
    key = service.create_account("limits")
    api = Api(service.base_url, key)
    start = api.cursor()
    accepted = api.http.post("/phone/call", json={"to": HUMAN, "message": "Say hi"}, headers=ASYNC)
    assert accepted.status_code == 202
    # The call's end is an event too (in either order with the wait's).
    [waited] = [e for e in api.events_until(start, 2) if e["eventType"] == "wait.ended"]
    assert waited["status"] == 504
    assert waited["response"]["error"]["code"] == "timeout"
    api.http.close()
    client = HumanWire(api_key=key, base_url=service.base_url, max_retries=0)
    client._driver.multiplex_after = 0  # every wait through the stream
    with pytest.raises(CallTimeoutError):
        client.phone.call(to=HUMAN, message="Say hi again")
    assert client._driver.hub is not None
    client.close()
