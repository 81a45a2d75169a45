"""The relay WebSocket on Telnyx (``/providers/telnyx/relay``), played by hand: the TeXML
request signed as Telnyx signs it, then the socket at the URL the TeXML named. Telnyx
signs no handshake, so the URL's token (an HMAC of the interaction, the service's own)
is what is checked: without it, or for another call, the socket is refused (403) or
closed, and nothing is logged at error level. The session itself is Twilio's
(``test_twilio_relay`` plays its hostile input)."""

from __future__ import annotations

import json
import logging
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from relay_support import KILLED_MID_TURN, Script, Scripted, SlowWhenAsked, kill, slow_when_asked
from telnyx_support import HUMAN, start_telnyx
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from humanwire import HumanWire
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.telnyx import CalleeScript, FakeTelnyx, TelnyxFakeServer

CALL_SID = "v3:relay-call-one"


@dataclass
class Relay:
    fake: FakeTelnyx
    runner: ServiceRunner
    client: HumanWire
    model: Any
    followed_by: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Each answered call's ``<Connect>`` action and status callback, by socket URL."""

    @property
    def url(self) -> str:
        return self.runner.base_url.replace("http://", "ws://", 1) + "/providers/telnyx/relay"

    def answered_call(self, sid: str = CALL_SID, to: str = HUMAN) -> str:
        """A call placed and answered (its TeXML requested as Telnyx does, by hand, at
        the URL the service gave: its interaction and token): the ``wss://`` URL its
        ``<ConversationRelay>`` names."""
        self.fake.callee(to, CalleeScript(ring_seconds=60))
        created = self.client.calls.create(to=to, prompt=f"Ask about Friday ({sid}).")
        [placed] = [
            call
            for call in self.fake.calls
            if parse_qs(urlsplit(call.params["Url"]).query)["interaction"]
            == [created.interaction_id]
        ]
        params = {
            "CallSid": sid,
            "AccountSid": self.fake.account_sid,
            "From": "+13125550142",
            "To": to,
            "CallStatus": "in-progress",
            "Direction": "outbound-api",
            "AnsweredBy": "human",
        }
        answer = self.fake.post_signed(
            placed.params["Url"],
            urlencode(params).encode(),
            content_type="application/x-www-form-urlencoded",
        )
        assert answer.status_code == 200
        connect = ET.fromstring(answer.text).find("Connect")
        relay = connect.find("ConversationRelay") if connect is not None else None
        assert connect is not None and relay is not None
        url = relay.get("url", "")
        self.followed_by[url] = (connect.get("action", ""), placed.params["StatusCallback"])
        return url

    def session_failed(self, sid: str, url: str) -> Any:
        """What Telnyx does when the socket went away: it asks the ``<Connect>``'s action
        (the answer hangs up), then reports the call completed. The interaction once
        ended."""
        [interaction] = parse_qs(urlsplit(url).query)["interaction"]
        action_url, status_url = self.followed_by[url]  # the URLs the service gave
        params = {"CallSid": sid, "AccountSid": self.fake.account_sid, "To": HUMAN}

        def post(to: str, extra: dict[str, str]) -> Any:
            return self.fake.post_signed(
                to,
                urlencode({**params, **extra}).encode(),
                content_type="application/x-www-form-urlencoded",
            )

        action = post(action_url, {})
        assert action.status_code == 200 and "<Hangup" in action.text
        status = post(status_url, {"CallStatus": "completed"})
        assert status.status_code == 204
        store = self.runner.engine.store

        def ended() -> Any:
            record = self.runner.call(store.get_interaction, interaction)
            return record if record.status != "pending" else None

        return self.fake.wait_for(ended, timeout=10)


def setup(call_sid: str) -> str:
    return json.dumps({"type": "setup", "callSid": call_sid, "callControlId": call_sid})


def turn(socket: ClientConnection) -> tuple[str, list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = []
    while True:
        message = json.loads(socket.recv(timeout=10))
        messages.append(message)
        if message["type"] == "end" or (message["type"] == "text" and message["last"]):
            words = "".join(m.get("token", "") for m in messages if m["type"] == "text")
            return words.strip(), messages


@pytest.fixture
def relay(
    database: str,
    fake_telnyx: TelnyxFakeServer,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
) -> Iterator[Relay]:
    model: Any = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(content='{"action": "say", "text": "Hi, this is Acme. Friday?"}'),
                AIMessage(content='{"action": "end", "text": "Thanks, goodbye."}'),
                AIMessage(content="They said Friday works."),
            ]
        )
    )
    if "slow" in request.node.name:
        model = SlowWhenAsked(slow_when_asked, first_token=0.0, per_token=0.0)
    if "killed" in request.node.name:
        model = Scripted(Script(KILLED_MID_TURN), first_token=0.0, per_token=0.05)
    runner, key = start_telnyx(database, fake_telnyx, voice_chat_model=model, voice_mode="relay")
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    caplog.set_level(logging.DEBUG, logger="humanwire")
    try:
        yield Relay(fake_telnyx.fake, runner, client, model)
        logged = [r for r in caplog.records if r.name.startswith("humanwire")]
        assert [r.getMessage() for r in logged if r.exc_info or r.levelno >= logging.ERROR] == []
    finally:
        client.close()
        runner.stop()


def test_the_texml_names_a_tokened_socket_and_telnyxs_frames_go_both_ways(relay: Relay) -> None:
    url = relay.answered_call()
    query = parse_qs(urlsplit(url).query)
    assert url.startswith(relay.url + "?") and set(query) == {"interaction", "token"}
    with connect(url) as socket:
        socket.send(setup(CALL_SID))
        words, messages = turn(socket)
        assert words == "Hi, this is Acme. Friday?"
        # Telnyx's published text frame: token and last, nothing else
        assert all(set(m) == {"type", "token", "last"} for m in messages)
        socket.send(json.dumps({"type": "prompt", "voicePrompt": "Friday works", "last": True}))
        words, _ = turn(socket)
        assert words == "Thanks, goodbye."
        assert json.loads(socket.recv(timeout=5)) == {"type": "end"}


@pytest.mark.parametrize(
    "change",
    ["no query", "no token", "no interaction", "bad token", "huge token", "other call's token"],
)
def test_a_handshake_without_a_valid_token_is_403(relay: Relay, change: str) -> None:
    url = relay.answered_call()
    query = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    if change == "no query":
        query = {}
    elif change == "no token":
        del query["token"]
    elif change == "no interaction":
        del query["interaction"]
    elif change == "bad token":
        query["token"] = query["token"][:-2] + ("AA" if query["token"][-2:] != "AA" else "BB")
    elif change == "huge token":
        query["token"] = "x" * 5000
    else:  # a valid token, of another call: the URL's interaction changed
        other = relay.answered_call("v3:relay-call-two", "+12025550104")
        query["interaction"] = parse_qs(urlsplit(other).query)["interaction"][0]
    forged = f"{relay.url}?{urlencode(query)}" if query else relay.url
    with pytest.raises(InvalidStatus) as refused:
        connect(forged, open_timeout=5).close()
    assert refused.value.response.status_code == 403


def test_a_socket_tokened_for_one_call_cannot_run_another(relay: Relay) -> None:
    other_url = relay.answered_call("v3:relay-call-two", "+12025550104")
    relay.answered_call()
    with connect(other_url) as socket:
        socket.send(setup(CALL_SID))  # the call this token was not made for
        with pytest.raises(ConnectionClosed):
            socket.recv(timeout=5)
    with connect(other_url) as socket:  # its own call: it runs
        socket.send(setup("v3:relay-call-two"))
        words, _ = turn(socket)
        assert words == "Hi, this is Acme. Friday?"


def test_a_replayed_handshake_is_refused_while_the_call_has_its_socket_and_after(
    relay: Relay,
) -> None:
    """The socket's token is the URL's, with no timestamp or nonce: the same URL again
    must not open a second socket and speak as the callee. A call takes one socket, and
    an ended call none: refused (403) before the socket is accepted."""

    def refused(url: str) -> int:
        with pytest.raises(InvalidStatus) as refusal:
            connect(url, open_timeout=5).close()
        return int(refusal.value.response.status_code)

    url = relay.answered_call()
    with connect(url) as socket:
        socket.send(setup(CALL_SID))
        assert turn(socket)[0] == "Hi, this is Acme. Friday?"
        assert refused(url) == 403
        socket.send(prompt("Friday works"))  # the call's own socket goes on
        assert turn(socket)[0] == "Thanks, goodbye."
    assert refused(url) == 403  # closed, it is still the call's only socket
    relay.session_failed(CALL_SID, url)
    assert refused(url) == 403
    # A call that ended before any socket opened takes none.
    other = relay.answered_call("v3:relay-call-two", "+12025550104")
    relay.session_failed("v3:relay-call-two", other)
    assert refused(other) == 403


def prompt(words: str) -> str:
    return json.dumps({"type": "prompt", "voicePrompt": words, "last": True})


def test_a_socket_killed_mid_turn_ends_the_call_with_its_summary(
    relay: Relay, caplog: pytest.LogCaptureFixture
) -> None:
    """The TCP connection dies while the agent is speaking (no close frame): the
    session stops the turn (the model's stream too) and stores what was said, and no
    error is raised or logged anywhere (the web server's included); Telnyx then asks
    the action and reports the end, and the summary is written."""
    url = relay.answered_call()
    socket = connect(url)
    socket.send(setup(CALL_SID))
    turn(socket)
    socket.send(prompt("Friday works"))
    first = json.loads(socket.recv(timeout=10))
    assert first["type"] == "text" and first["token"].strip() == "Great."
    kill(socket)
    record = relay.session_failed(CALL_SID, url)
    assert record.outcome == "completed"
    assert record.result["payload"]["summary"] == "They said Friday works."
    state = relay.runner.call(relay.runner.engine.store.get_provider_state, "telnyx-call", CALL_SID)
    assert state["transcript"] == [
        ["agent", "Hi, this is Acme. Friday?"],
        ["callee", "Friday works"],
    ]
    _, cut, _ = relay.model.reply.asked
    time.sleep(relay.model.duration(cut.answer))  # the whole answer's time: it was stopped
    assert cut.streamed and not cut.finished and cut.yielded < cut.tokens
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert [f"{r.name}: {r.getMessage()}" for r in failed] == []


def test_one_calls_slow_model_never_slows_another(relay: Relay) -> None:
    slow_sid, fast_sid = "v3:relay-call-slow", "v3:relay-call-fast"
    slow = connect(relay.answered_call(slow_sid, "+12025550101"))
    fast = connect(relay.answered_call(fast_sid, "+12025550102"))
    with slow, fast:
        slow.send(setup(slow_sid))
        fast.send(setup(fast_sid))
        turn(slow)
        turn(fast)
        slow.send(prompt("slow please"))
        time.sleep(0.2)  # the slow turn has started
        started = time.monotonic()
        fast.send(prompt("quick one"))
        words, _ = turn(fast)
        assert words == "Right away." and time.monotonic() - started < 1.0
        words, _ = turn(slow)
        assert words == "Let me think about that for a long while."
