"""Calls through Twilio run by the voice agent, end to end: the service places the call
on the contract fake, the fake's scripted callee answers the service's TwiML turn by
turn, and a scripted chat model plays the agent's brain. The behaviours both carriers
share over the relay (barge-in, keys, silence, a failing model, the setup timeout) are
``test_call_behaviours``'s, on each carrier in each mode."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from twilio_support import HUMAN, OTHER_HUMAN, POOL, SMS_FROM, Live, in_background, start_live

from humanwire import CallTimeoutError, HumanWire
from humanwire.testing.receiver import WebhookReceiver
from humanwire.testing.twilio import CalleeScript, TwilioFakeServer

TRANSFER = "+13125550123"


def brain(*replies: str) -> GenericFakeChatModel:
    """The chat model's answers, in the order the agent asks: opening, turns, summary."""
    return GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in replies]))


def say(text: str) -> str:
    return f'{{"action": "say", "text": "{text}"}}'


def end(text: str) -> str:
    return f'{{"action": "end", "text": "{text}"}}'


Make = Callable[..., Live]


@pytest.fixture(params=["gather", "relay"])
def voice_mode(request: pytest.FixtureRequest) -> str:
    """Every call test runs over both: turn by turn (``<Gather>``) and ConversationRelay
    (the fake speaks its WebSocket messages)."""
    return str(request.param)


@pytest.fixture
def voice_live(database: str, fake_twilio: TwilioFakeServer, voice_mode: str) -> Iterator[Make]:
    made: list[Live] = []

    def make(model: GenericFakeChatModel, **changes: object) -> Live:
        changes.setdefault("voice_mode", voice_mode)
        changes.setdefault("voice_relay_silence", 0.3)
        runner, key = start_live(database, fake_twilio, voice_chat_model=model, **changes)
        live = Live(
            fake_twilio.fake,
            runner,
            HumanWire(api_key=key, base_url=runner.base_url, max_retries=0),
            key,
        )
        made.append(live)
        return live

    yield make
    for live in made:
        live.client.close()
        live.runner.stop()


def test_a_call_is_talked_through_and_summarised(voice_live: Make, voice_mode: str) -> None:
    live = voice_live(
        brain(
            say("Hi, this is Acme. Can you work Friday?"),
            end("Great, see you Friday. Goodbye."),
            "The person agreed to work on Friday.",
        )
    )
    live.fake.callee(HUMAN, CalleeScript(says=["Yes, Friday works"]))
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        ended = live.client.calls.create(
            to=HUMAN,
            prompt="You are Acme's scheduler. Ask if they can work Friday.",
            wait_for_call_end=True,
            voice="male",
            language="en-GB",
        )
        [event] = receiver.wait_for("call.conversation.ended")
    assert (ended.status, ended.outcome) == ("ended", "completed")
    assert ended.summary == "The person agreed to work on Friday."
    [call] = live.fake.calls
    assert call.params["From"] == SMS_FROM and call.params["To"] == HUMAN
    assert call.params["MachineDetection"] == "Enable"
    assert call.said == [
        "Hi, this is Acme. Can you work Friday?",
        "Great, see you Friday. Goodbye.",
    ]
    assert call.heard == ["Yes, Friday works"]
    if voice_mode == "gather":
        assert 'voice="Polly.Brian"' in call.twiml[0]  # male, en-GB
    else:
        assert 'voice="Brian"' in call.twiml[0] and 'ttsProvider="Amazon"' in call.twiml[0]
        # the words went out as the model wrote them, several tokens per turn
        tokens = [m for m in call.relay_messages if m["type"] == "text" and m["token"]]
        assert len(tokens) > 4
        assert [m["type"] for m in call.relay_messages][-1] == "end"
    assert event.payload.interaction_id == ended.interaction_id
    assert [(t.speaker, t.text) for t in event.payload.transcript or []] == [
        ("agent", "Hi, this is Acme. Can you work Friday?"),
        ("human", "Yes, Friday works"),
        ("agent", "Great, see you Friday. Goodbye."),
    ]
    assert live.fake.violations == []


def test_the_callee_asking_for_a_human_is_transferred(voice_live: Make) -> None:
    live = voice_live(
        brain(
            say("Hello, this is the clinic about your appointment."),
            '{"action": "transfer", "text": "Let me put you through."}',
            "The patient asked for a person and was put through.",
        )
    )
    live.fake.callee(HUMAN, CalleeScript(says=["I want to talk to a person"]))
    ended = live.client.calls.create(
        to=HUMAN,
        prompt="Confirm the appointment; transfer if they ask for a person.",
        transfer_to=TRANSFER,
        wait_for_call_end=True,
    )
    assert ended.outcome == "transferred"
    assert TRANSFER in (ended.summary or "")
    assert live.fake.calls[0].transferred_to == TRANSFER


def test_an_answering_machine_gets_the_voicemail_and_no_answer(voice_live: Make) -> None:
    live = voice_live(brain('{"text": "Hi, Acme here: please call us back about Friday."}'))
    live.fake.callee(HUMAN, CalleeScript(answer="machine"))
    ended = live.client.calls.create(
        to=HUMAN,
        prompt="Ask about Friday. Voicemail: ask them to call back.",
        wait_for_call_end=True,
    )
    assert (ended.outcome, ended.error) == ("no_answer", "human did not respond")
    assert live.fake.calls[0].said == ["Hi, Acme here: please call us back about Friday."]
    assert "voicemail" in (ended.summary or "")


@pytest.mark.parametrize("answer", ["no-answer", "busy", "failed"])
def test_a_call_nobody_takes_is_no_answer(voice_live: Make, answer: str) -> None:
    live = voice_live(brain())
    live.fake.callee(HUMAN, CalleeScript(answer=answer))  # type: ignore[arg-type]
    ended = live.client.calls.create(to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True)
    assert (ended.outcome, ended.error) == ("no_answer", "human did not respond")
    assert live.fake.calls[0].said == []


def test_phone_call_past_its_limit_is_a_timeout_and_the_call_is_hung_up(voice_live: Make) -> None:
    live = voice_live(brain(*[say(f"Question {i}?") for i in range(40)]), phone_call_limit=2.0)
    live.fake.callee(HUMAN, CalleeScript(says=["hmm"] * 200, seconds_per_turn=0.3))
    with pytest.raises(CallTimeoutError):
        live.client.phone.call(to=HUMAN, message="Keep them talking.")
    live.fake.wait_for(lambda: live.fake.calls[0].done, timeout=10)
    assert live.fake.calls[0].hang_up_requested
    assert any(
        method == "POST" and path.endswith(f"/Calls/{live.fake.calls[0].sid}.json")
        for method, path, _params in live.fake.requests
    )


def test_an_inbound_call_to_a_reserved_number_takes_a_message(
    voice_live: Make, voice_mode: str
) -> None:
    live = voice_live(brain("A caller asked whether the flat is still available."))
    live.client.numbers.reserve(POOL[0])
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        call = live.fake.inbound_call(
            OTHER_HUMAN, POOL[0], CalleeScript(says=["Is the flat still available?"])
        )
        [event] = receiver.wait_for("call.conversation.ended")
    assert event.payload.summary == "A caller asked whether the flat is still available."
    assert (event.payload.from_, event.payload.to) == (OTHER_HUMAN, POOL[0])
    assert call.heard == ["Is the flat still available?"]
    assert len(call.said) == 2  # the greeting, then the thanks
    if voice_mode == "relay":  # the greeting is the relay's welcome, the thanks streamed
        assert "<ConversationRelay" in call.twiml[0] and "<Gather" not in call.twiml[0]
        spoken = [m for m in call.relay_messages if m["type"] == "text"]
        assert spoken and spoken[-1]["last"] is True
        assert "".join(m["token"] for m in spoken).strip() == call.said[1]
    else:
        assert call.relay_messages == [] and "<Gather" in call.twiml[0]


def test_voice_turns_need_twilios_signature(voice_live: Make) -> None:
    import httpx

    live = voice_live(brain())
    response = httpx.post(
        f"{live.base_url}/providers/twilio/voice", data={"CallSid": "CA" + "0" * 32}
    )
    assert response.status_code == 403
    unknown = live.fake.post_signed(
        f"{live.base_url}/providers/twilio/voice",
        {"CallSid": "CA" + "1" * 32, "Direction": "outbound-api", "To": HUMAN, "From": SMS_FROM},
    )
    assert unknown.status_code == 200 and "<Hangup" in unknown.text


def test_phone_call_transfers_to_the_skills_transfer_number(
    voice_live: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_TRANSFER_NUMBER", TRANSFER)
    live = voice_live(
        brain(
            say("Hi, the deploy needs a decision."),
            '{"action": "transfer", "text": "Connecting you to the on-call engineer."}',
            "They asked for the on-call engineer.",
        )
    )
    live.fake.callee(HUMAN, CalleeScript(says=["put me through to someone"]))
    ended = live.client.phone.call(to=HUMAN, message="Ask whether the deploy may go ahead.")
    assert ended.outcome == "transferred"
    assert live.fake.calls[0].transferred_to == TRANSFER


def test_the_hang_up_is_retried_while_twilio_fails(voice_live: Make) -> None:
    live = voice_live(brain(*[say(f"Question {i}?") for i in range(40)]), phone_call_limit=1.5)
    live.fake.callee(HUMAN, CalleeScript(says=["hmm"] * 200, seconds_per_turn=0.3))

    def place() -> None:
        with pytest.raises(CallTimeoutError):
            live.client.phone.call(to=HUMAN, message="Keep them talking.")

    placed = in_background(place)
    live.fake.wait_for(lambda: live.fake.calls and live.fake.calls[0].said)
    live.fake.fail_next(503, times=4)  # the turns are callbacks: only the hang-up fails
    placed()
    call = live.fake.calls[0]

    def updates() -> int:
        return sum(1 for m, p, _ in live.fake.requests if m == "POST" and call.sid in p)

    # Four refused (three by the first try and its quick retries, one by the stored
    # job's next try after a second), then the fifth is taken.
    live.fake.wait_for(lambda: updates() >= 5, timeout=15)
    live.fake.wait_for(lambda: not live.fake._failures, timeout=5)
    assert call.done


@pytest.mark.parametrize("voice_mode", ["gather"])
def test_keys_pressed_are_the_answer(voice_live: Make, voice_mode: str) -> None:
    """DTMF over <Gather>: the fake's callee says the digits (over the relay, on both
    carriers: ``test_call_behaviours``)."""
    live = voice_live(
        brain(
            say("Press 1 to confirm Friday, 2 to cancel."),
            end("Confirmed. Goodbye."),
            "Confirmed Friday with the keypad.",
        )
    )
    live.fake.callee(HUMAN, CalleeScript(says=["1"]))
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        ended = live.client.calls.create(to=HUMAN, prompt="Confirm Friday.", wait_for_call_end=True)
        [event] = receiver.wait_for("call.conversation.ended")
    assert (ended.outcome, ended.summary) == ("completed", "Confirmed Friday with the keypad.")
    assert [(t.speaker, t.text) for t in event.payload.transcript or []] == [
        ("agent", "Press 1 to confirm Friday, 2 to cancel."),
        ("human", "1"),
        ("agent", "Confirmed. Goodbye."),
    ]
