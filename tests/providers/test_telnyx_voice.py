"""Calls through Telnyx's TeXML run by the same voice agent as Twilio's, end to end: the
service places the call on the contract fake, the fake's scripted callee answers the
service's TeXML turn by turn (callbacks signed with Ed25519), and a scripted chat model
plays the agent's brain. The same outcomes, texts and errors as the Twilio path, turn by
turn and over ConversationRelay (the fake speaks its socket's messages); the behaviours
both carriers share over the relay are ``test_call_behaviours``'s."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from telnyx_support import HUMAN, OTHER_HUMAN, TELNYX_FROM, TELNYX_POOL, TelnyxLive, start_telnyx
from twilio_support import in_background

from humanwire import CallTimeoutError, HumanWire
from humanwire.testing.receiver import WebhookReceiver
from humanwire.testing.telnyx import CalleeScript, TelnyxFakeServer

TRANSFER = "+13125550123"


def brain(*replies: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in replies]))


def say(text: str) -> str:
    return f'{{"action": "say", "text": "{text}"}}'


def end(text: str) -> str:
    return f'{{"action": "end", "text": "{text}"}}'


Make = Callable[..., TelnyxLive]


@pytest.fixture(params=["gather", "relay"])
def voice_mode(request: pytest.FixtureRequest) -> str:
    """Every call test runs over both: turn by turn (``<Gather>``) and ConversationRelay."""
    return str(request.param)


@pytest.fixture
def voice_live(database: str, fake_telnyx: TelnyxFakeServer, voice_mode: str) -> Iterator[Make]:
    made: list[TelnyxLive] = []

    def make(model: GenericFakeChatModel, **changes: object) -> TelnyxLive:
        changes.setdefault("voice_mode", voice_mode)
        changes.setdefault("voice_relay_silence", 0.3)
        runner, key = start_telnyx(database, fake_telnyx, voice_chat_model=model, **changes)
        live = TelnyxLive(
            fake_telnyx.fake,
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
        assert live.fake.violations == []


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
    assert call.params["From"] == TELNYX_FROM and call.params["To"] == HUMAN
    assert call.params["ApplicationSid"] == live.fake.connection_id
    assert call.params["MachineDetection"] == "Enable"
    assert call.params["StatusCallback"].startswith(f"{live.base_url}/providers/telnyx/call-status")
    assert call.said == [
        "Hi, this is Acme. Can you work Friday?",
        "Great, see you Friday. Goodbye.",
    ]
    assert call.heard == ["Yes, Friday works"]
    assert 'voice="Polly.Brian"' in call.texml[0]  # male, en-GB: as Telnyx's <Say> takes it
    if voice_mode == "relay":
        assert "<ConversationRelay" in call.texml[0] and "ttsProvider" not in call.texml[0]
        # the words went out as the model wrote them, in the frames Telnyx publishes
        # (the fake counts any other field as a violation)
        tokens = [m for m in call.relay_messages if m["type"] == "text" and m["token"]]
        assert len(tokens) > 4
        assert call.relay_messages[-1] == {"type": "end"}
    assert [(t.speaker, t.text) for t in event.payload.transcript or []] == [
        ("agent", "Hi, this is Acme. Can you work Friday?"),
        ("human", "Yes, Friday works"),
        ("agent", "Great, see you Friday. Goodbye."),
    ]


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
    call = live.fake.calls[0]
    # Hung up through the API, or by the service's answer to a turn that came in after
    # the call ended (whichever reaches the carrier first): the API call is made anyway.
    assert call.hang_up_requested and call.ended_by in ("api", "service")
    assert call.params["TimeLimit"] == 32
    assert any(r.operation == "calls.update" and call.sid in r.path for r in live.fake.requests)


def test_an_inbound_call_to_a_reserved_number_takes_a_message(
    voice_live: Make, voice_mode: str
) -> None:
    live = voice_live(brain("A caller asked whether the flat is still available."))
    live.client.numbers.reserve(TELNYX_POOL[0])
    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        call = live.fake.inbound_call(
            OTHER_HUMAN, TELNYX_POOL[0], CalleeScript(says=["Is the flat still available?"])
        )
        [event] = receiver.wait_for("call.conversation.ended")
    assert event.payload.summary == "A caller asked whether the flat is still available."
    assert (event.payload.from_, event.payload.to) == (OTHER_HUMAN, TELNYX_POOL[0])
    assert call.heard == ["Is the flat still available?"]
    assert len(call.said) == 2  # the greeting, then the thanks
    if voice_mode == "relay":  # the greeting is the relay's welcome, the thanks streamed
        assert "<ConversationRelay" in call.texml[0] and "<Gather" not in call.texml[0]
        spoken = [m for m in call.relay_messages if m["type"] == "text"]
        assert spoken and spoken[-1]["last"] is True
        assert "".join(m["token"] for m in spoken).strip() == call.said[1]
    else:
        assert call.relay_messages == [] and "<Gather" in call.texml[0]


def test_voice_turns_need_telnyxs_signature(voice_live: Make) -> None:
    live = voice_live(brain())
    url = f"{live.base_url}/providers/telnyx/voice"
    assert httpx.post(url, data={"CallSid": "v3:x"}).status_code == 403
    unknown = live.fake.post_signed(
        url,
        b"CallSid=v3%3Aunknown&Direction=outbound-api&To=%2B12025550100",
        content_type="application/x-www-form-urlencoded",
    )
    assert unknown.status_code == 200 and "<Hangup" in unknown.text


@pytest.mark.parametrize("voice_mode", ["gather"])
def test_a_turn_asked_again_is_answered_as_before_and_changes_nothing(voice_live: Make) -> None:
    """Telnyx retrying a turn (or a replay of it, freshly signed, which the signature
    cannot tell apart): the same markup, no second entry in the transcript, no extra
    question to the brain. Shared with Twilio's turns (``delivery.call_turns``)."""
    live = voice_live(
        brain(
            say("Can you work Friday?"),
            say("Morning or afternoon?"),
            end("Morning it is. Goodbye."),
            "They will work Friday morning.",
        )
    )
    live.fake.callee(HUMAN, CalleeScript(says=["Yes", "Morning"], seconds_per_turn=1.5))

    def place() -> None:
        ended = live.client.calls.create(
            to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True
        )
        assert ended.summary == "They will work Friday morning."

    with WebhookReceiver() as receiver:
        receiver.register(live.client)
        placed = in_background(place)
        live.fake.wait_for(
            lambda: live.fake.calls and len(live.fake.calls[0].texml) >= 2, timeout=10
        )
        [(url, body)] = [
            (url, body)
            for url, body, _status in live.fake.callbacks
            if "turn=1" in url and b"Yes" in body
        ]
        # Signed anew (another timestamp: the same signature at the same URL is a replay, 403).
        again = live.fake.post_signed(
            url,
            body,
            timestamp=int(time.time()) - 2,
            content_type="application/x-www-form-urlencoded",
        )
        assert again.status_code == 200 and again.text == live.fake.calls[0].texml[1]
        placed()
        [event] = receiver.wait_for("call.conversation.ended")
    assert [(t.speaker, t.text) for t in event.payload.transcript or []] == [
        ("agent", "Can you work Friday?"),
        ("human", "Yes"),
        ("agent", "Morning or afternoon?"),
        ("human", "Morning"),
        ("agent", "Morning it is. Goodbye."),
    ]


@pytest.mark.parametrize("voice_mode", ["gather"])
def test_a_signed_callback_of_a_call_never_placed_cannot_end_or_speak_for_one(
    voice_live: Make,
) -> None:
    """Telnyx signs the timestamp and the body, not the URL. A callback genuinely signed
    for a ``CallSid`` this service never placed (another TeXML application's, captured)
    sent to a URL naming one of its calls (``?interaction=``) neither ends that call nor
    takes its turns: the URL's interaction is believed only beside the service's token,
    and only for the ``CallSid`` Telnyx first called back with."""
    live = voice_live(
        brain(say("Can you work Friday?"), end("Thanks, goodbye."), "They can work Friday.")
    )
    # The callee takes a while to answer: the call is mid-turn while the forgeries come.
    live.fake.callee(HUMAN, CalleeScript(says=["Yes"], seconds_per_turn=5.0))

    def place() -> None:
        ended = live.client.calls.create(
            to=HUMAN, prompt="Ask about Friday.", wait_for_call_end=True
        )
        assert (ended.outcome, ended.summary) == ("completed", "They can work Friday.")

    placed = in_background(place)
    # The call's first turn is answered: its CallSid is the interaction's now.
    live.fake.wait_for(lambda: live.fake.calls and live.fake.calls[0].texml, timeout=10)
    [call] = live.fake.calls
    [interaction_id] = parse_qs(urlsplit(str(call.params["Url"])).query)["interaction"]
    stranger = {
        "CallSid": "v3:never-placed-here",
        "AccountSid": live.fake.account_sid,
        "From": TELNYX_FROM,
        "To": HUMAN,
        "Direction": "outbound-api",
        "AnsweredBy": "human",
    }
    base = f"{live.base_url}/providers/telnyx"
    named = f"interaction={interaction_id}"
    for url, extra in (
        (f"{base}/voice?{named}", {"CallStatus": "in-progress"}),
        (f"{base}/voice?{named}&token=forged&turn=1", {"SpeechResult": "No, never."}),
        (f"{base}/call-status?{named}", {"CallStatus": "completed"}),
        (f"{base}/call-status?{named}&token=forged", {"CallStatus": "no-answer"}),
        # the service's own URL, tokened: for another CallSid than the call's
        (str(call.params["StatusCallback"]), {"CallStatus": "busy"}),
    ):
        answer = live.fake.post_signed(
            url,
            urlencode({**stranger, **extra}).encode(),
            content_type="application/x-www-form-urlencoded",
        )
        if "/voice" in url:
            assert answer.status_code == 200 and "does not take calls" in answer.text, url
        else:
            assert answer.status_code == 204, url
    status = live.client.interactions.status(interaction_id)
    assert status.status == "pending"
    placed()  # the call's own callbacks end it: what the callee said is its summary
    assert live.fake.calls[0].heard == ["Yes"]
