"""The relay WebSocket on Telnyx (``/providers/telnyx/relay``), played by hand: the TeXML
request signed as Telnyx signs it, then the socket at the URL the TeXML named. Telnyx
signs no handshake, so the URL's token (an HMAC of the interaction, the service's own)
is what is checked: without it, or for another call, the socket is refused (403) or
closed, and nothing is logged at error level. The session itself is Twilio's
(``test_twilio_relay`` plays its hostile input)."""

from __future__ import annotations

import json
import logging
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from telnyx_support import HUMAN, start_telnyx
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from humanwire import HumanWire
from humanwire.server.runner import ServiceRunner
from humanwire.testing.telnyx import CalleeScript, FakeTelnyx, TelnyxFakeServer

CALL_SID = "v3:relay-call-one"


@dataclass
class Relay:
    fake: FakeTelnyx
    runner: ServiceRunner
    client: HumanWire

    @property
    def url(self) -> str:
        return self.runner.base_url.replace("http://", "ws://", 1) + "/providers/telnyx/relay"

    def answered_call(self, sid: str = CALL_SID, to: str = HUMAN) -> str:
        """A call placed and answered (its TeXML requested as Telnyx does, by hand): the
        ``wss://`` URL its ``<ConversationRelay>`` names."""
        self.fake.callee(to, CalleeScript(ring_seconds=60))
        created = self.client.calls.create(to=to, prompt=f"Ask about Friday ({sid}).")
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
            f"{self.runner.base_url}/providers/telnyx/voice?interaction={created.interaction_id}",
            urlencode(params).encode(),
            content_type="application/x-www-form-urlencoded",
        )
        assert answer.status_code == 200
        relay = ET.fromstring(answer.text).find("Connect/ConversationRelay")
        assert relay is not None
        return relay.get("url", "")


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
    database: str, fake_telnyx: TelnyxFakeServer, caplog: pytest.LogCaptureFixture
) -> Iterator[Relay]:
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(content='{"action": "say", "text": "Hi, this is Acme. Friday?"}'),
                AIMessage(content='{"action": "end", "text": "Thanks, goodbye."}'),
            ]
        )
    )
    runner, key = start_telnyx(database, fake_telnyx, voice_chat_model=model, voice_mode="relay")
    client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
    caplog.set_level(logging.DEBUG, logger="humanwire")
    try:
        yield Relay(fake_telnyx.fake, runner, client)
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
