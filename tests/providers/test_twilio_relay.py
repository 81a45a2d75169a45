"""The relay WebSocket of real-time calls (``[voice] mode = "relay"``) against hostile
input: the test plays Twilio's side by hand (the TwiML request, then the socket), so it
can send what Twilio never would. Whatever arrives, the socket is refused (403) or closed
cleanly, the call goes on where it can, and nothing is logged at error level."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from relay_support import KILLED_MID_TURN, Script, Scripted, SlowWhenAsked, kill, slow_when_asked
from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]
from twilio_support import HUMAN, start_live
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from humanwire import HumanWire
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.twilio import CalleeScript, FakeTwilio, TwilioFakeServer

CALL_SID = "CA" + "7" * 32


@dataclass
class Relay:
    fake: FakeTwilio
    runner: ServiceRunner
    client: HumanWire
    model: Any

    interaction_id: str = ""
    """The last call answered's (``answered_call``)."""

    @property
    def url(self) -> str:
        return self.runner.base_url.replace("http://", "ws://", 1) + "/providers/twilio/relay"

    def open(
        self, *, signature: str | None = None, interaction: str | None = None
    ) -> ClientConnection:
        """The socket as Twilio opens it for ``interaction`` (the last call answered's by
        default): the URL the TwiML named, signed."""
        url = f"{self.url}?interaction={interaction or self.interaction_id or 'none'}"
        if signature is None:
            signature = RequestValidator(self.fake.auth_token).compute_signature(url, {})
        return connect(url, additional_headers={"X-Twilio-Signature": signature})

    def answered_call(self, sid: str = CALL_SID, to: str = HUMAN) -> str:
        """A call placed and answered (the TwiML request as Twilio makes it, by hand):
        its TwiML connects to the relay. The fake's own callee keeps ringing."""
        self.fake.callee(to, CalleeScript(ring_seconds=60))
        created = self.client.calls.create(to=to, prompt=f"Ask about Friday ({sid}).")
        self.interaction_id = created.interaction_id
        answer = self.fake.post_signed(
            f"{self.runner.base_url}/providers/twilio/voice?interaction={created.interaction_id}",
            {
                "CallSid": sid,
                "AccountSid": self.fake.account_sid,
                "From": "+14155550142",
                "To": to,
                "CallStatus": "in-progress",
                "Direction": "outbound-api",
                "AnsweredBy": "human",
            },
        )
        assert answer.status_code == 200 and "<ConversationRelay" in answer.text
        return sid

    def session_failed(self, sid: str) -> Any:
        """What Twilio does when the socket went away: it asks the ``<Connect>``'s action
        (``SessionStatus=failed``; the answer hangs up), then reports the call completed.
        The interaction once ended."""
        base, interaction = self.runner.base_url, self.interaction_id
        params = {"CallSid": sid, "AccountSid": self.fake.account_sid, "SessionStatus": "failed"}
        action = self.fake.post_signed(
            f"{base}/providers/twilio/voice?interaction={interaction}&relay=ended", params
        )
        assert "<Hangup" in action.text
        self.fake.post_signed(
            f"{base}/providers/twilio/call-status?interaction={interaction}",
            {**params, "CallStatus": "completed", "CallDuration": "12"},
        )
        store = self.runner.engine.store

        def ended() -> Any:
            record = self.runner.call(store.get_interaction, interaction)
            return record if record.status != "pending" else None

        return self.fake.wait_for(ended, timeout=10)


def setup(call_sid: str) -> str:
    return json.dumps({"type": "setup", "callSid": call_sid, "sessionId": "VX1"})


def turn(socket: ClientConnection) -> tuple[str, list[dict[str, Any]]]:
    """The agent's next turn: its words and every message up to ``last`` (or ``end``)."""
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
    fake_twilio: TwilioFakeServer,
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
    changes: dict[str, Any] = {}
    if "outlives" in request.node.name:
        changes = {"head_timeout": 1.0, "body_timeout": 1.0, "voice_relay_silence": 30.0}
    runner, key = start_live(
        database, fake_twilio, voice_chat_model=model, voice_mode="relay", **changes
    )
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    caplog.set_level(logging.DEBUG, logger="humanwire")
    try:
        yield Relay(fake_twilio.fake, runner, client, model)
        logged = [r for r in caplog.records if r.name.startswith("humanwire")]
        assert [r.getMessage() for r in logged if r.exc_info or r.levelno >= logging.ERROR] == []
    finally:
        client.close()
        runner.stop()


@pytest.mark.parametrize("signature", ["", "bad", "x" * 5000, "other-url"])
def test_a_handshake_without_twilios_signature_is_403(relay: Relay, signature: str) -> None:
    if signature == "other-url":  # a real signature, of another URL
        signature = RequestValidator(relay.fake.auth_token).compute_signature(
            relay.url + "?interaction=x", {}
        )
    with pytest.raises(InvalidStatus) as refused:
        relay.open(signature=signature)
    assert refused.value.response.status_code == 403


@pytest.mark.parametrize(
    "first",
    [
        setup("CA" + "0" * 32),  # a call this service does not know
        setup(""),
        json.dumps({"type": "setup"}),
        json.dumps({"type": "setup", "callSid": ["CA1"]}),
        json.dumps({"type": "prompt", "voicePrompt": "hi", "last": True}),
    ],
)
def test_a_socket_for_no_known_call_is_closed(relay: Relay, first: str) -> None:
    relay.answered_call()  # the URL names a call; the setup names none of its own
    with relay.open() as socket:
        socket.send(first)
        with pytest.raises(ConnectionClosed):
            socket.recv(timeout=5)


def test_a_socket_opened_for_one_call_cannot_run_another(relay: Relay) -> None:
    """The signature covers the URL, which names the call's interaction: a handshake
    signed for one call whose setup names another is closed (and the call's own socket
    may still come), and a URL naming no call is refused before it is accepted."""
    other_sid = relay.answered_call("CA" + "3" * 32, "+12025550103")
    other_interaction = relay.interaction_id
    sid = relay.answered_call()
    with relay.open(interaction=other_interaction) as socket:
        socket.send(setup(sid))
        with pytest.raises(ConnectionClosed):
            socket.recv(timeout=5)
    bare = RequestValidator(relay.fake.auth_token).compute_signature(relay.url, {})
    with pytest.raises(InvalidStatus) as refused:
        connect(relay.url, additional_headers={"X-Twilio-Signature": bare}, open_timeout=5)
    assert refused.value.response.status_code == 403
    with relay.open(interaction=other_interaction) as socket:  # its own call: it runs
        socket.send(setup(other_sid))
        words, _ = turn(socket)
        assert words == "Hi, this is Acme. Friday?"


def test_a_replayed_handshake_is_refused_while_the_call_has_its_socket_and_after(
    relay: Relay,
) -> None:
    """Twilio's signature of the handshake has no timestamp or nonce: the same URL and
    signature again (one captured header) must not open a second socket and speak as the
    callee. A call takes one socket, and an ended call none: refused before accept."""

    def refused() -> int:
        with pytest.raises(InvalidStatus) as refusal:
            relay.open().close()
        return int(refusal.value.response.status_code)

    sid = relay.answered_call()
    with relay.open() as socket:
        socket.send(setup(sid))
        assert turn(socket)[0] == "Hi, this is Acme. Friday?"
        assert refused() == 403
        # the call's own socket goes on
        socket.send(json.dumps({"type": "prompt", "voicePrompt": "Friday works", "last": True}))
        assert turn(socket)[0] == "Thanks, goodbye."
    assert refused() == 403  # closed, it is still the call's only socket
    record = relay.session_failed(sid)
    assert record.outcome == "completed"
    assert refused() == 403
    # A call that ended before any socket opened takes none.
    relay.answered_call("CA" + "4" * 32, "+12025550104")
    relay.session_failed("CA" + "4" * 32)
    assert refused() == 403


def test_a_replayed_handshake_is_refused_by_another_replica(fake_twilio: TwilioFakeServer) -> None:
    """Replicas share PostgreSQL (and one public URL): the call's one socket is claimed
    there, so the same handshake sent to another replica while the call has its socket
    is refused too."""
    from dataclasses import replace

    from pg_support import drop_schema, new_schema

    schema, url = new_schema("hw_relay")
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content='{"action": "say", "text": "Hi. Friday?"}')])
    )
    first, key = start_live(url, fake_twilio, voice_chat_model=model, voice_mode="relay")
    second = ServiceRunner(replace(first.config), "127.0.0.1", 0, public_url=first.base_url)
    client = HumanWire(api_key=key, base_url=first.base_url, max_retries=0)
    try:
        second.start()
        relay = Relay(fake_twilio.fake, first, client, model)
        sid = relay.answered_call()
        with relay.open() as socket:
            socket.send(setup(sid))
            assert turn(socket)[0] == "Hi. Friday?"
            signed = f"{relay.url}?interaction={relay.interaction_id}"
            signature = RequestValidator(relay.fake.auth_token).compute_signature(signed, {})
            elsewhere = signed.replace(
                first.base_url.removeprefix("http://"), second.bound_url.removeprefix("http://")
            )
            assert elsewhere != signed
            with pytest.raises(InvalidStatus) as refused:
                connect(elsewhere, additional_headers={"X-Twilio-Signature": signature}).close()
            assert refused.value.response.status_code == 403
    finally:
        client.close()
        second.stop()
        first.stop()
        drop_schema(schema)


def test_a_socket_outlives_the_request_time_limits(relay: Relay) -> None:
    """The request limits time a request's head and body (1 s each here); an accepted
    socket is no request: the call goes on past them (it was cut at ``body_timeout``,
    a minute by default)."""
    sid = relay.answered_call()
    with relay.open() as socket:
        socket.send(setup(sid))
        assert turn(socket)[0] == "Hi, this is Acme. Friday?"
        time.sleep(3.0)  # the callee thinks it over
        socket.send(json.dumps({"type": "prompt", "voicePrompt": "Friday works", "last": True}))
        assert turn(socket)[0] == "Thanks, goodbye."


def test_garbage_is_ignored_and_the_call_goes_on(relay: Relay) -> None:
    sid = relay.answered_call()
    with relay.open() as socket:
        socket.send("not json")
        socket.send(b"\x00\xff binary")
        socket.send(setup(sid))
        words, messages = turn(socket)
        assert words == "Hi, this is Acme. Friday?"
        assert len([m for m in messages if m["type"] == "text"]) > 3  # streamed
        for garbage in (
            "[1, 2, 3]",
            '"a string"',
            "{" * 10_000,  # nested deeper than any parser likes
            json.dumps({"type": "no-such-type"}),
            json.dumps({"type": "prompt"}),
            json.dumps({"type": "prompt", "voicePrompt": 42, "last": True}),
            json.dumps({"type": "dtmf", "digit": "12"}),
            json.dumps({"type": "dtmf"}),
            json.dumps({"type": "interrupt", "utteranceUntilInterrupt": ["x"]}),
            json.dumps({"type": "error", "description": "x" * 10_000}),
            json.dumps({"type": "prompt", "voicePrompt": "Fri", "last": False}),  # partial
        ):
            socket.send(garbage)
        socket.send(json.dumps({"type": "prompt", "voicePrompt": "Friday works", "last": True}))
        words, messages = turn(socket)
        assert words == "Thanks, goodbye."
        end = json.loads(socket.recv(timeout=5))
        assert end["type"] == "end"
        assert json.loads(end["handoffData"]) == {"reason": "end"}
    state = relay.runner.call(relay.runner.engine.store.get_provider_state, "twilio-call", sid)
    assert state["transcript"] == [
        ["agent", "Hi, this is Acme. Friday?"],
        ["callee", "Friday works"],
        ["agent", "Thanks, goodbye."],
    ]


def test_a_frame_too_large_closes_the_socket(relay: Relay) -> None:
    sid = relay.answered_call()
    with relay.open() as socket:
        socket.send(setup(sid))
        turn(socket)
        socket.send(json.dumps({"type": "prompt", "voicePrompt": "x" * 200_000, "last": True}))
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                socket.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


def test_only_garbage_closes_the_socket(relay: Relay) -> None:
    sid = relay.answered_call()
    with relay.open() as socket:
        socket.send(setup(sid))
        turn(socket)
        with pytest.raises(ConnectionClosed):
            for _ in range(500):
                socket.send("garbage")
            socket.recv(timeout=5)


def test_a_dropped_socket_ends_the_call_with_its_summary(relay: Relay) -> None:
    """The socket drops mid-call: Twilio asks the Connect's action (the call hangs up)
    and reports the end; the summary is written from what was said."""
    sid = relay.answered_call()
    with relay.open() as socket:
        socket.send(setup(sid))
        turn(socket)
        socket.send(json.dumps({"type": "prompt", "voicePrompt": "Friday works", "last": True}))
        turn(socket)
    record = relay.session_failed(sid)
    assert record.outcome == "completed"
    assert record.result["payload"]["summary"] == "They said Friday works."


def test_one_calls_slow_model_never_slows_another(relay: Relay) -> None:
    slow_sid = relay.answered_call("CA" + "1" * 32, "+12025550101")
    slow = relay.open()
    fast_sid = relay.answered_call("CA" + "2" * 32, "+12025550102")
    fast = relay.open()
    with slow, fast:
        slow.send(setup(slow_sid))
        fast.send(setup(fast_sid))
        turn(slow)
        turn(fast)
        slow.send(json.dumps({"type": "prompt", "voicePrompt": "slow please", "last": True}))
        time.sleep(0.2)  # the slow turn has started
        started = time.monotonic()
        fast.send(json.dumps({"type": "prompt", "voicePrompt": "quick one", "last": True}))
        words, _ = turn(fast)
        assert words == "Right away." and time.monotonic() - started < 1.0
        words, _ = turn(slow)
        assert words == "Let me think about that for a long while."


def test_a_socket_killed_mid_turn_ends_the_call_with_its_summary(
    relay: Relay, caplog: pytest.LogCaptureFixture
) -> None:
    """The TCP connection dies while the agent is speaking (no close frame): the
    session stops the turn (the model's stream too) and stores what was said, and no
    error is raised or logged anywhere (the web server's included); Twilio then asks
    the action and reports the end, and the summary is written."""
    sid = relay.answered_call()
    socket = relay.open()
    socket.send(setup(sid))
    turn(socket)
    socket.send(json.dumps({"type": "prompt", "voicePrompt": "Friday works", "last": True}))
    first = json.loads(socket.recv(timeout=10))
    assert first["type"] == "text" and first["token"].strip() == "Great."
    kill(socket)
    record = relay.session_failed(sid)
    assert record.outcome == "completed"
    assert record.result["payload"]["summary"] == "They said Friday works."
    state = relay.runner.call(relay.runner.engine.store.get_provider_state, "twilio-call", sid)
    assert state["transcript"] == [
        ["agent", "Hi, this is Acme. Friday?"],
        ["callee", "Friday works"],
    ]
    _, cut, _ = relay.model.reply.asked
    time.sleep(relay.model.duration(cut.answer))  # the whole answer's time: it was stopped
    assert cut.streamed and not cut.finished and cut.yielded < cut.tokens
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert [f"{r.name}: {r.getMessage()}" for r in failed] == []
