"""The call behaviours both carriers share, each test on Twilio and Telnyx, turn by turn
(``<Gather>``) and over ConversationRelay: the service places the call on the carrier's
contract fake, the fake's scripted callee answers (over the relay it speaks the socket's
messages), a scripted chat model plays the agent's brain. Carrier-specific details (the
create request, the markup's voice, signatures) stay in ``test_twilio_voice.py`` and
``test_telnyx_voice.py``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from relay_support import Script, Scripted
from telnyx_support import start_telnyx
from twilio_support import HUMAN, start_live

from humanwire import HumanWire
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.testing.receiver import WebhookReceiver
from humanwire.testing.telnyx import TelnyxFakeServer
from humanwire.testing.twilio import BargeIn, CalleeScript, TwilioFakeServer
from humanwire.testing.voice import tokens


def brain(*replies: str) -> GenericFakeChatModel:
    """The chat model's answers, in the order the agent asks: opening, turns, summary."""
    return GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in replies]))


def say(text: str) -> str:
    return f'{{"action": "say", "text": "{text}"}}'


def end(text: str) -> str:
    return f'{{"action": "end", "text": "{text}"}}'


@dataclass
class CallLive:
    carrier: str
    mode: str
    fake: Any
    """The carrier's fake (``FakeTwilio`` or ``FakeTelnyx``: the same callee controls)."""
    runner: ServiceRunner
    client: HumanWire


Make = Callable[..., CallLive]


@pytest.fixture(params=["twilio", "telnyx"])
def carrier(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["gather", "relay"])
def voice_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def call_live(
    database: str,
    carrier: str,
    voice_mode: str,
    request: pytest.FixtureRequest,
) -> Iterator[Make]:
    made: list[CallLive] = []
    server: TwilioFakeServer | TelnyxFakeServer = request.getfixturevalue(f"fake_{carrier}")

    def make(model: GenericFakeChatModel | Scripted, **changes: object) -> CallLive:
        changes.setdefault("voice_mode", voice_mode)
        changes.setdefault("voice_relay_silence", 0.3)
        if isinstance(server, TwilioFakeServer):
            runner, key = start_live(database, server, voice_chat_model=model, **changes)
        else:
            runner, key = start_telnyx(database, server, voice_chat_model=model, **changes)
        client = HumanWire(api_key=key, base_url=runner.base_url, max_retries=0)
        live = CallLive(carrier, voice_mode, server.fake, runner, client)
        made.append(live)
        return live

    yield make
    for live in made:
        live.client.close()
        live.runner.stop()
        assert live.fake.violations == []


def test_the_callee_speaking_over_the_agent_is_the_next_turn(call_live: Make) -> None:
    """Barge-in: over the relay the agent's speech and the model's stream stop at the
    first words and the transcript keeps what was heard; over <Gather> the answer is
    an ordinary one."""
    opening = "Hi, this is Acme calling about your shift on Friday and the new rota."
    live = call_live(brain(say(opening), end("Sorry to bother you. Goodbye."), "A wrong number."))
    live.fake.callee(HUMAN, CalleeScript(says=[BargeIn("Wrong number, sorry")]))
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        ended = live.client.calls.create(
            to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True
        )
        [event] = receiver.wait_for("call.conversation.ended")
    assert ended.outcome == "completed"
    [call] = live.fake.calls
    assert call.heard == ["Wrong number, sorry"]
    spoken = [(t.speaker, t.text) for t in event.payload.transcript or []]
    if live.mode == "relay":
        [cut] = call.interrupted
        assert cut and opening.startswith(cut) and len(cut) < len(opening)
        assert call.said == [cut, "Sorry to bother you. Goodbye."]
        assert spoken[0] == ("agent", cut)
    else:
        assert call.said == [opening, "Sorry to bother you. Goodbye."]
        assert spoken[0] == ("agent", opening)
    assert spoken[1:] == [
        ("human", "Wrong number, sorry"),
        ("agent", "Sorry to bother you. Goodbye."),
    ]


@pytest.mark.parametrize("voice_mode", ["relay"])
def test_an_interruption_mid_stream_stops_the_speech_and_the_model(call_live: Make) -> None:
    """The person speaks over the agent while the model is still writing its answer
    (a model streaming a word every 80 ms), for a second before their final transcript:
    from the ``interrupt`` on, not one more token of that turn goes to the carrier (nor
    its ``last``), the model's stream is stopped then (not at the transcript), and what
    the person said is the next turn."""
    opening = (
        "Hi, this is Acme calling about your shift on Friday and the new rota "
        "we sent out to everyone last week."
    )
    goodbye = "Sorry to bother you. Goodbye."
    script = Script([say(opening), end(goodbye), "A wrong number."])
    model = Scripted(script, first_token=0.0, per_token=0.08)
    live = call_live(model)
    live.fake.callee(HUMAN, CalleeScript(says=[BargeIn("Wrong number, sorry", speaking=1.0)]))
    ended = live.client.calls.create(to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True)
    assert (ended.outcome, ended.summary) == ("completed", "A wrong number.")
    [call] = live.fake.calls
    [cut] = call.interrupted  # what the person had heard: the first words
    assert cut and opening.startswith(cut) and len(cut) < len(opening) / 2
    # every text frame, the interrupt's included in order (the fake records the frames
    # that were still coming after it): the cut turn's stop at what was heard, without
    # a ``last``; then the goodbye
    frames = [m for m in call.relay_messages if m["type"] == "text"]
    assert "".join(m["token"] for m in frames).split() == cut.split() + goodbye.split()
    assert [m for m in frames if m["last"]] == [frames[-1]]
    assert call.said == [cut, goodbye]
    first, second, _summary = script.asked
    time.sleep(model.duration(first.answer))  # the whole opening's time: was it stopped?
    assert first.streamed and not first.finished
    # stopped at the interrupt: the tokens up to the words heard (the JSON's three
    # first, then the words), a few more in flight at most (half a second's on a loaded
    # machine); stopped only at the transcript, a second later, would be 12 more
    heard = 3 + len(tokens(cut))
    assert heard <= first.yielded <= heard + 6
    assert second.prompt.endswith(
        f"Agent: {cut}\nPerson: Wrong number, sorry\n\nReply with the JSON object for your "
        "next turn."
    )


@pytest.mark.parametrize("voice_mode", ["relay"])
def test_the_first_words_reach_the_carrier_before_the_model_has_finished(
    call_live: Make,
) -> None:
    """Streaming: a three-sentence answer written a word every 50 ms; when the model
    is about to write its last word, the carrier has already got the first sentence
    (the ``text`` frames it had by then are recorded)."""
    opening = "Hi, this is Acme. I am calling about your shift on Friday. Can you work it?"
    script = Script([say(opening), end("Great. Goodbye."), "They can work Friday."])
    live = call_live(Scripted(script, first_token=0.0, per_token=0.05))

    def carrier_got() -> str:
        with live.fake.lock:
            frames = list(live.fake.calls[0].relay_messages)
        return "".join(m.get("token", "") for m in frames if m["type"] == "text")

    script.probe = carrier_got
    live.fake.callee(HUMAN, CalleeScript(says=["Yes, I can"]))
    ended = live.client.calls.create(to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True)
    assert (ended.outcome, ended.summary) == ("completed", "They can work Friday.")
    first = script.asked[0]
    assert first.finished and first.probed is not None
    assert first.probed.strip().startswith("Hi, this is Acme.")
    assert len(first.probed.strip()) < len(opening)  # the last word was still to come
    assert live.fake.calls[0].said[0] == opening


@pytest.mark.parametrize("voice_mode", ["relay"])
def test_keys_pressed_are_the_answer(call_live: Make) -> None:
    """DTMF over the relay: the digits (``dtmf`` messages) are one answer once the person
    stops pressing. (Over <Gather> the fakes' callees say digits as speech; Twilio's
    keypad Gather is ``test_twilio_voice``'s.)"""
    live = call_live(
        brain(
            say("Press 1 to confirm Friday, 2 to cancel."),
            end("Confirmed. Goodbye."),
            "Confirmed Friday with the keypad.",
        )
    )
    live.fake.callee(HUMAN, CalleeScript(says=["12"]))
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        ended = live.client.calls.create(to=HUMAN, prompt="Confirm Friday.", wait_for_call_end=True)
        [event] = receiver.wait_for("call.conversation.ended")
    assert (ended.outcome, ended.summary) == ("completed", "Confirmed Friday with the keypad.")
    assert [(t.speaker, t.text) for t in event.payload.transcript or []] == [
        ("agent", "Press 1 to confirm Friday, 2 to cancel."),
        ("human", "12"),
        ("agent", "Confirmed. Goodbye."),
    ]


def test_silence_ends_the_call_as_no_answer(call_live: Make) -> None:
    live = call_live(brain(say("Hello? This is Acme."), say("Are you there?")))
    live.fake.callee(HUMAN, CalleeScript(says=[None, None]))
    ended = live.client.calls.create(to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True)
    assert ended.outcome == "no_answer"
    assert live.fake.calls[0].heard == [None, None]
    assert len(live.fake.calls[0].said) == 3  # opening, a second try, the goodbye


def test_a_model_that_fails_ends_the_call_politely(call_live: Make) -> None:
    live = call_live(brain())  # every request to the model fails
    live.fake.callee(HUMAN, CalleeScript(says=["Hello?"]))
    ended = live.client.calls.create(to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True)
    assert (ended.outcome, ended.error) == ("no_answer", "human did not respond")
    [call] = live.fake.calls
    assert call.said == ["Sorry, I have to go. Goodbye."]
    assert call.errors == []


@pytest.mark.parametrize("voice_mode", ["relay"])
def test_a_socket_that_never_sends_setup_is_closed_and_the_call_ends(call_live: Make) -> None:
    """The carrier opens the relay socket but never sends ``setup``: the service closes
    it after ``voice_relay_setup_timeout``, the carrier asks the <Connect>'s action (the
    call hangs up) and the call ends with its summary (nobody spoke: no answer)."""
    live = call_live(brain(say("Hi, this is Acme.")), voice_relay_setup_timeout=0.5)
    live.fake.relay_setup = False
    live.fake.callee(HUMAN, CalleeScript(says=["Yes, Friday works"]))
    started = time.monotonic()
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        ended = live.client.calls.create(
            to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True
        )
        [event] = receiver.wait_for("call.conversation.ended")
    assert time.monotonic() - started < 8  # the timeout, not a hung call
    assert (ended.outcome, ended.error) == ("no_answer", "human did not respond")
    assert ended.summary == "The call connected but nobody spoke: human did not respond."
    assert event.payload.interaction_id == ended.interaction_id
    [call] = live.fake.calls
    assert call.said == [] and call.relay_messages == []  # the agent never spoke
    assert call.done or live.fake.wait_for(lambda: call.done, timeout=5)
    assert call.statuses[-1] == "completed"
