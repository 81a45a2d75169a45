"""The voice agent (``humanwire.server.voice``): the brain driven by fake chat models, and
the TwiML it answers with, parsed and checked structurally."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from humanwire.server import voice
from humanwire.server.voice import (
    FALLBACK_GOODBYE,
    INBOUND_GREETING,
    VOICE_TABLE,
    Turn,
    VoiceAgent,
    load_chat_model,
    provider_voice,
    resolve_voice,
)
from humanwire.server.voice.agent import parse_turn

PROMPT = (
    "You call as Dana from Acme Dental to confirm Sam's cleaning on Tuesday at 3 pm. "
    "If Sam cannot make it, ask for a better day. Voicemail: ask Sam to call 555-0100."
)


# --- fakes --------------------------------------------------------------------------------


class RecordingModel(GenericFakeChatModel):
    """A scripted chat model that keeps every message list it was given."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop=stop, **kwargs)


def recording(*replies: str | AIMessage) -> RecordingModel:
    return RecordingModel(messages=iter(replies))


class BrokenModel(BaseChatModel):
    """Raises, with words of the transcript in the error (they must stay out of logs)."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "broken"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        raise RuntimeError("provider refused: my secret diagnosis is flu")


class SlowModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "slow"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:  # pragma: no cover - only the async path is used
        raise AssertionError("sync path used")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        await asyncio.sleep(5)
        raise AssertionError("not cancelled")  # pragma: no cover


def system_and_user(messages: list[BaseMessage]) -> tuple[str, str]:
    assert len(messages) == 2
    system, user = messages
    assert isinstance(system, SystemMessage)
    assert isinstance(user, HumanMessage)
    assert isinstance(system.content, str)
    assert isinstance(user.content, str)
    return system.content, user.content


# --- the call turns -----------------------------------------------------------------------


async def test_opening_sends_the_prompt_and_returns_the_models_turn() -> None:
    model = recording('{"action": "say", "text": "Hi, this is Dana from Acme Dental."}')
    turn = await VoiceAgent(model).opening(PROMPT, transfer_available=False)

    assert turn == Turn("say", "Hi, this is Dana from Acme Dental.")
    assert len(model.seen) == 1
    system, user = system_and_user(model.seen[0])
    assert PROMPT in system
    assert "ONE JSON object" in system
    assert "answered" in user


async def test_transfer_rule_only_when_a_transfer_number_exists() -> None:
    without = recording('{"action": "say", "text": "Hello"}')
    await VoiceAgent(without).opening(PROMPT, transfer_available=False)
    system_without, _ = system_and_user(without.seen[0])
    assert "transfer" not in system_without.lower()
    assert '"say" | "end"' in system_without
    assert "nobody else is available" in system_without

    with_transfer = recording('{"action": "say", "text": "Hello"}')
    await VoiceAgent(with_transfer).opening(PROMPT, transfer_available=True)
    system_with, _ = system_and_user(with_transfer.seen[0])
    assert '"say" | "transfer" | "end"' in system_with
    assert "asks to speak to a human" in system_with


async def test_next_turn_sends_the_transcript_with_silence_marked() -> None:
    model = recording('{"action": "say", "text": "Would Wednesday work instead?"}')
    transcript = [
        ("agent", "Hi Sam, this is Dana from Acme Dental."),
        ("callee", "Hi, what's up?"),
        ("agent", "Can you make Tuesday at 3 pm?"),
        ("callee", ""),
        ("agent", "Are you still there?"),
        ("callee", "Sorry, no, Tuesday is bad."),
    ]
    turn = await VoiceAgent(model).next_turn(PROMPT, transcript, transfer_available=False)

    assert turn == Turn("say", "Would Wednesday work instead?")
    system, user = system_and_user(model.seen[0])
    assert PROMPT in system
    assert "Agent: Hi Sam, this is Dana from Acme Dental." in user
    assert "Person: Hi, what's up?" in user
    assert "Person: (silence)" in user
    assert user.index("Person: (silence)") < user.index("Person: Sorry, no, Tuesday is bad.")


async def test_transfer_is_returned_when_available() -> None:
    model = recording('{"action": "transfer", "text": "Let me connect you with our office."}')
    turn = await VoiceAgent(model).next_turn(
        PROMPT, [("agent", "Hi"), ("callee", "Can I talk to a person?")], transfer_available=True
    )
    assert turn == Turn("transfer", "Let me connect you with our office.")


async def test_transfer_without_a_number_degrades_to_say() -> None:
    model = recording('{"action": "transfer", "text": "Transferring you now."}')
    turn = await VoiceAgent(model).next_turn(
        PROMPT, [("agent", "Hi"), ("callee", "Get me a human")], transfer_available=False
    )
    assert turn.action == "say"
    assert "Transferring" not in turn.text
    assert "nobody else available" in turn.text


async def test_end_turn() -> None:
    model = recording('{"action": "end", "text": "Great, see you Tuesday. Goodbye!"}')
    turn = await VoiceAgent(model).next_turn(
        PROMPT, [("agent", "Tuesday at 3?"), ("callee", "Yes, perfect.")], transfer_available=False
    )
    assert turn == Turn("end", "Great, see you Tuesday. Goodbye!")


async def test_list_content_blocks_use_only_the_text_blocks() -> None:
    reply = AIMessage(
        content=[
            {"type": "reasoning", "reasoning": "they said yes, so end"},
            {"type": "text", "text": '{"action": "end", '},
            {"type": "text", "text": '"text": "Thanks, goodbye."}'},
        ]
    )
    turn = await VoiceAgent(recording(reply)).opening(PROMPT, transfer_available=False)
    assert turn == Turn("end", "Thanks, goodbye.")


# --- parsing the model's reply ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"action": "say", "text": "Hello Sam."}', Turn("say", "Hello Sam.")),
        ('```json\n{"action": "end", "text": "Bye."}\n```', Turn("end", "Bye.")),
        ('```\n{"action": "end", "text": "Bye."}\n```', Turn("end", "Bye.")),
        (
            'Sure! Here is my answer:\n{"action": "transfer", "text": "Connecting you."} Done.',
            Turn("transfer", "Connecting you."),
        ),
        (
            '{"note": {"x": 1}, "action": "say", "text": "Nested first."}',
            Turn("say", "Nested first."),
        ),
        ("Hello, is this Sam?", Turn("say", "Hello, is this Sam?")),
        ("```\nJust plain words.\n```", Turn("say", "Just plain words.")),
        ('{"action": "say", "text": "Hello Sam, I am call', Turn("say", "Hello Sam, I am call")),
        ('{"action": "hangup", "text": "Bye now."}', Turn("end", "Bye now.")),
        ('{"action": "END_CALL", "text": "Bye now."}', Turn("end", "Bye now.")),
        ('{"action": "dance", "text": "Hm."}', Turn("say", "Hm.")),
        ('{"text": "No action given."}', Turn("say", "No action given.")),
        (
            '{"action": "say", "text": "**Hi** _there_, see [our site](http://x)."}',
            Turn("say", "Hi there, see our site."),
        ),
        ('{"action": "say", "text": "- one\\n- two"}', Turn("say", "one two")),
        ("Agent: Hello there.", Turn("say", "Hello there.")),
        ('{"action": "say", "text": 42}', Turn("say", "42")),
    ],
)
def test_parse_turn(content: str, expected: Turn) -> None:
    assert parse_turn(content) == expected


@pytest.mark.parametrize(
    ("content", "action"),
    [
        ("", "say"),
        ("   ", "say"),
        ('{"action": "say", "text": ""}', "say"),
        ('{"action": "end", "text": "  "}', "end"),
        ('{"action": "transfer"}', "transfer"),
        ('{"foo": 1}', "say"),
        ("```json\n```", "say"),
    ],
)
def test_empty_text_gets_a_fallback_sentence(content: str, action: str) -> None:
    turn = parse_turn(content)
    assert turn.action == action
    assert turn.text.strip()
    assert "{" not in turn.text


def test_long_text_is_cut_at_a_sentence() -> None:
    sentence = "This is a sentence that goes on for a while. "
    turn = parse_turn('{"action": "say", "text": "' + sentence * 40 + '"}')
    assert len(turn.text) <= 600
    assert turn.text.endswith(".")


# --- failures and guard rails -------------------------------------------------------------


async def test_model_error_ends_the_call_and_logs_without_the_transcript(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = BrokenModel()
    agent = VoiceAgent(model)
    caplog.set_level(logging.WARNING, logger="humanwire.voice")

    turn = await agent.next_turn(
        PROMPT, [("agent", "Hi"), ("callee", "I have the flu")], transfer_available=False
    )
    opening = await agent.opening(PROMPT, transfer_available=True)

    assert turn == Turn("end", FALLBACK_GOODBYE) == Turn("end", "Sorry, I have to go. Goodbye.")
    assert opening == Turn("end", FALLBACK_GOODBYE)
    assert model.calls == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    logged = " ".join(r.getMessage() for r in warnings)
    assert "RuntimeError" in logged
    assert "flu" not in logged
    assert "Dana" not in logged


async def test_a_slow_model_times_out_into_the_fallback() -> None:
    agent = VoiceAgent(SlowModel(), timeout=0.05)
    turn = await asyncio.wait_for(
        agent.next_turn(PROMPT, [("agent", "Hi"), ("callee", "Yes?")], transfer_available=False),
        timeout=2,
    )
    assert turn == Turn("end", FALLBACK_GOODBYE)


def chat(agent_turns: int) -> list[tuple[str, str]]:
    transcript: list[tuple[str, str]] = []
    for index in range(agent_turns):
        transcript.append(("agent", f"Question {index}?"))
        transcript.append(("callee", f"Answer {index}."))
    return transcript


async def test_max_turns_ends_the_call_without_asking_the_model() -> None:
    model = recording()
    turn = await VoiceAgent(model, max_turns=20).next_turn(
        PROMPT, chat(19), transfer_available=False
    )
    assert turn.action == "end"
    assert "Goodbye" in turn.text
    assert model.seen == []


async def test_below_max_turns_the_model_is_asked() -> None:
    model = recording('{"action": "say", "text": "One more question."}')
    turn = await VoiceAgent(model, max_turns=20).next_turn(
        PROMPT, chat(18), transfer_available=False
    )
    assert turn == Turn("say", "One more question.")
    assert len(model.seen) == 1


async def test_repeated_silence_ends_the_call() -> None:
    model = recording('{"action": "say", "text": "Hello? Are you there?"}')
    agent = VoiceAgent(model, max_silences=2)
    once = [("agent", "Hi"), ("callee", "")]
    twice = [*once, ("agent", "Hello?"), ("callee", "  ")]

    first = await agent.next_turn(PROMPT, once, transfer_available=False)
    assert first == Turn("say", "Hello? Are you there?")
    second = await agent.next_turn(PROMPT, twice, transfer_available=False)
    assert second.action == "end"
    assert len(model.seen) == 1


def test_agent_settings_are_checked() -> None:
    with pytest.raises(ValueError):
        VoiceAgent(recording(), max_turns=1)
    with pytest.raises(ValueError):
        VoiceAgent(recording(), max_silences=0)
    with pytest.raises(ValueError):
        VoiceAgent(recording(), timeout=0)


# --- voicemail and summary ----------------------------------------------------------------


async def test_voicemail_follows_the_prompt() -> None:
    model = recording(
        '```json\n{"text": "Hi Sam, this is Dana from Acme Dental. Please call 555-0100."}\n```'
    )
    message = await VoiceAgent(model).voicemail(PROMPT)
    assert message == "Hi Sam, this is Dana from Acme Dental. Please call 555-0100."
    system, _ = system_and_user(model.seen[0])
    assert PROMPT in system
    assert "voicemail script" in system


async def test_voicemail_plain_text_and_failures() -> None:
    plain = await VoiceAgent(recording("Hello, Acme Dental calling.")).voicemail(PROMPT)
    assert plain == "Hello, Acme Dental calling."
    empty = await VoiceAgent(recording('{"text": ""}')).voicemail("Call about the order.")
    assert empty.strip()
    assert "{" not in empty
    failed = await VoiceAgent(BrokenModel()).voicemail(PROMPT)
    assert failed.strip()
    assert "flu" not in failed


async def test_summary_with_an_empty_transcript_says_nobody_spoke() -> None:
    model = recording()
    summary = await VoiceAgent(model).summarize(PROMPT, [], "no-answer")
    assert "Nobody spoke" in summary
    assert "no-answer" in summary
    assert model.seen == []


async def test_summary_comes_from_the_model_with_transcript_and_outcome() -> None:
    model = recording("```\nSam cannot make Tuesday and asked for **Wednesday** at 10.\n```")
    transcript = [("agent", "Can you make Tuesday?"), ("callee", "No, Wednesday at 10 works.")]
    summary = await VoiceAgent(model).summarize(PROMPT, transcript, "completed")
    assert summary == "Sam cannot make Tuesday and asked for Wednesday at 10."
    system, user = system_and_user(model.seen[0])
    assert PROMPT in system
    assert "Person: No, Wednesday at 10 works." in user
    assert "Outcome: completed" in user


async def test_summary_reads_a_json_reply() -> None:
    model = recording('Here it is:\n```json\n{"summary": "Sam confirmed Tuesday."}\n```')
    summary = await VoiceAgent(model).summarize(
        PROMPT, [("callee", "Yes, Tuesday is fine.")], "completed"
    )
    assert summary == "Sam confirmed Tuesday."


async def test_summary_falls_back_to_the_callees_words() -> None:
    transcript = [("agent", "Can you make Tuesday?"), ("callee", "Only after five.")]
    summary = await VoiceAgent(BrokenModel()).summarize(PROMPT, transcript, "completed")
    assert "Only after five." in summary
    assert "completed" in summary


async def test_inbound_summary_uses_the_model_with_the_inbound_context() -> None:
    model = recording("The caller, Lee, asked to be called back about the invoice.")
    transcript = [("agent", INBOUND_GREETING), ("callee", "It's Lee, call me about the invoice.")]
    summary = await VoiceAgent(model).summarize(None, transcript, "completed")
    assert summary == "The caller, Lee, asked to be called back about the invoice."
    system, user = system_and_user(model.seen[0])
    assert "shares no information" in system
    assert "Caller: It's Lee, call me about the invoice." in user


# --- inbound calls ------------------------------------------------------------------------


async def test_inbound_greeting_is_fixed_and_shares_nothing() -> None:
    model = recording()
    agent = VoiceAgent(model)
    greeting = await agent.inbound_greeting()
    assert greeting == INBOUND_GREETING
    assert "message" in greeting
    assert model.seen == []


async def test_inbound_next_thanks_after_the_first_message() -> None:
    model = recording()
    agent = VoiceAgent(model)
    said = await agent.inbound_next([("agent", INBOUND_GREETING), ("callee", "Call me back.")])
    assert said.action == "end"
    assert "Thank you" in said.text

    silent_once = [("agent", INBOUND_GREETING), ("callee", "")]
    again = await agent.inbound_next(silent_once)
    assert again.action == "say"

    silent_twice = [*silent_once, ("agent", again.text), ("callee", "")]
    done = await agent.inbound_next(silent_twice)
    assert done.action == "end"
    assert model.seen == []


# --- loading the model --------------------------------------------------------------------


def test_load_chat_model_uses_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain.chat_models

    asked: list[str] = []
    fake = recording()

    def init_chat_model(model: str) -> BaseChatModel:
        asked.append(model)
        return fake

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    assert load_chat_model("  openai:gpt-4o-mini ") is fake
    assert asked == ["openai:gpt-4o-mini"]


def test_load_chat_model_without_langchain_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    with pytest.raises(RuntimeError, match=r"humanwire\[voice\]"):
        load_chat_model("openai:gpt-4o-mini")


def test_load_chat_model_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain.chat_models

    with pytest.raises(ValueError, match="empty"):
        load_chat_model("  ")

    def missing_package(model: str) -> BaseChatModel:
        raise ImportError("Initializing ChatOpenAI requires the langchain-openai package.")

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", missing_package)
    with pytest.raises(RuntimeError, match="langchain-openai"):
        load_chat_model("openai:gpt-4o-mini")

    monkeypatch.undo()
    with pytest.raises(ValueError, match="nosuchprovider:model"):
        load_chat_model("nosuchprovider:model")


def test_importing_the_package_loads_neither_langchain_nor_twilio() -> None:
    code = (
        "import sys, humanwire.server.voice\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain', 'langchain_core', 'twilio')]\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""


# --- TwiML --------------------------------------------------------------------------------


def parse(twiml: str) -> ET.Element:
    assert twiml.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(twiml)
    assert root.tag == "Response"
    return root


def test_say_and_listen_structure() -> None:
    root = parse(
        voice.say_and_listen(
            "Can you make Tuesday?",
            action_url="https://hw.example/providers/twilio/voice",
            voice="female",
            language="en-GB",
            timeout=7,
        )
    )
    gather, redirect = list(root)
    assert gather.tag == "Gather"
    assert gather.attrib == {
        "input": "speech",
        "action": "https://hw.example/providers/twilio/voice",
        "method": "POST",
        "language": "en-GB",
        "speechTimeout": "auto",
        "timeout": "7",
    }
    (say,) = list(gather)
    assert say.tag == "Say"
    assert say.attrib == {"voice": "Polly.Amy", "language": "en-GB"}
    assert say.text == "Can you make Tuesday?"
    assert redirect.tag == "Redirect"
    assert redirect.attrib == {"method": "POST"}
    assert redirect.text == "https://hw.example/providers/twilio/voice?silence=1"


def test_silence_url_keeps_an_existing_query() -> None:
    root = parse(voice.say_and_listen("Hi", action_url="https://hw.example/v?call=CA1&turn=2"))
    gather, redirect = list(root)
    assert gather.get("action") == "https://hw.example/v?call=CA1&turn=2"
    assert redirect.text == "https://hw.example/v?call=CA1&turn=2&silence=1"
    assert voice.silence_url("https://x/v") == "https://x/v?silence=1"


def test_text_is_escaped_and_control_characters_dropped() -> None:
    text = 'Fish & chips < 5 > 3 "quoted" \x00\x07end'
    twiml = voice.say_and_hangup(text, voice="male", language="en-US")
    assert "&amp;" in twiml
    assert "&lt;" in twiml
    assert "\x00" not in twiml
    root = parse(twiml)
    say, hang = list(root)
    assert say.text == 'Fish & chips < 5 > 3 "quoted" end'
    assert say.get("voice") == "Polly.Matthew"
    assert hang.tag == "Hangup"


def test_empty_text_leaves_the_say_out() -> None:
    root = parse(voice.say_and_listen("  ", action_url="https://x/v"))
    gather, _ = list(root)
    assert list(gather) == []
    root = parse(voice.say_and_hangup(""))
    assert [element.tag for element in root] == ["Hangup"]


def test_say_and_dial() -> None:
    root = parse(
        voice.say_and_dial(
            "Connecting you now.",
            "+14155550123",
            voice="Polly.Brian",
            language="en-GB",
        )
    )
    say, dial = list(root)
    assert say.attrib == {"voice": "Polly.Brian", "language": "en-GB"}
    assert say.text == "Connecting you now."
    assert dial.tag == "Dial"
    assert dial.text == "+14155550123"
    assert dial.attrib == {}

    root = parse(
        voice.say_and_dial(
            "One moment.",
            "+14155550123",
            action_url="https://x/dial-status",
            caller_id="+14155550999",
        )
    )
    _, dial = list(root)
    assert dial.attrib == {
        "action": "https://x/dial-status",
        "method": "POST",
        "callerId": "+14155550999",
    }
    with pytest.raises(ValueError):
        voice.say_and_dial("Hi", " ")


def test_hangup() -> None:
    root = parse(voice.hangup())
    assert [element.tag for element in root] == ["Hangup"]


def test_voicemail_twiml() -> None:
    root = parse(voice.voicemail("Please call us back.", voice="female", language="de-DE"))
    pause, say, hang = list(root)
    assert pause.tag == "Pause"
    assert pause.get("length") == "1"
    assert say.attrib == {"voice": "Polly.Vicki", "language": "de-DE"}
    assert say.text == "Please call us back."
    assert hang.tag == "Hangup"

    root = parse(voice.voicemail("Bye.", pause=0))
    assert [element.tag for element in root] == ["Say", "Hangup"]


# --- voices -------------------------------------------------------------------------------

EXPECTED_VOICES = {
    "en-US": ("Polly.Joanna", "Polly.Matthew"),
    "en-GB": ("Polly.Amy", "Polly.Brian"),
    "en-AU": ("Polly.Nicole", "Polly.Russell"),
    "fr-FR": ("Polly.Celine", "Polly.Mathieu"),
    "de-DE": ("Polly.Vicki", "Polly.Hans"),
    "es-ES": ("Polly.Lucia", "Polly.Enrique"),
    "es-US": ("Polly.Lupe", "Polly.Miguel"),
    "it-IT": ("Polly.Carla", "Polly.Giorgio"),
    "pt-BR": ("Polly.Camila", "Polly.Ricardo"),
    "ja-JP": ("Polly.Mizuki", "Polly.Takumi"),
    "nl-NL": ("Polly.Lotte", "Polly.Ruben"),
}


@pytest.mark.parametrize(("language", "voices"), sorted(EXPECTED_VOICES.items()))
def test_provider_voice_table(language: str, voices: tuple[str, str]) -> None:
    female, male = voices
    assert provider_voice("female", language) == female
    assert provider_voice("male", language) == male
    assert VOICE_TABLE[language] == {"female": female, "male": male}


def test_every_table_entry_is_a_polly_voice_pair() -> None:
    assert set(EXPECTED_VOICES) <= set(VOICE_TABLE)
    for language, voices in VOICE_TABLE.items():
        assert set(voices) == {"female", "male"}
        assert voices["female"] != voices["male"]
        assert all(name.startswith("Polly.") and name.isascii() for name in voices.values())
        assert resolve_voice("male", language) == (voices["male"], language)
    with pytest.raises(TypeError):
        VOICE_TABLE["xx-XX"] = {}  # type: ignore[index]


@pytest.mark.parametrize(
    ("voice_value", "language", "expected"),
    [
        ("female", "sw-KE", ("Polly.Joanna", "en-US")),
        ("male", "xx", ("Polly.Matthew", "en-US")),
        ("FEMALE", "en-gb", ("Polly.Amy", "en-GB")),
        ("Male", "pt_BR", ("Polly.Ricardo", "pt-BR")),
        ("female", "fr-CA", ("Polly.Celine", "fr-FR")),
        ("male", "es-MX", ("Polly.Miguel", "es-US")),
        ("female", "", ("Polly.Joanna", "en-US")),
        (None, None, ("Polly.Joanna", "en-US")),
        ("Polly.Amy", "en-GB", ("Polly.Amy", "en-GB")),
        ("woman", "fr-FR", ("woman", "fr-FR")),
        ("Google.en-GB-Standard-A", "en-GB", ("Google.en-GB-Standard-A", "en-GB")),
    ],
)
def test_resolve_voice(
    voice_value: str | None, language: str | None, expected: tuple[str, str]
) -> None:
    assert resolve_voice(voice_value, language) == expected


def test_unknown_language_falls_back_and_other_voices_pass_through() -> None:
    assert provider_voice("female", "tlh-KL") == "Polly.Joanna"
    assert provider_voice("male", "tlh-KL") == "Polly.Matthew"
    assert provider_voice("Polly.Takumi-Neural", "en-US") == "Polly.Takumi-Neural"
    root = parse(voice.say_and_hangup("Hallo", voice="Polly.Marlene", language="de-DE"))
    assert root[0].attrib == {"voice": "Polly.Marlene", "language": "de-DE"}


# --- streaming (relay mode) -------------------------------------------------------------


def stream_turn(model: BaseChatModel, **options: Any) -> tuple[Turn, list[str]]:
    """The opening, streamed: the turn and the pieces handed out, in order."""
    pieces: list[str] = []

    async def on_text(text: str) -> None:
        pieces.append(text)

    agent = VoiceAgent(model, **options)
    turn = asyncio.run(agent.opening(PROMPT, transfer_available=False, on_text=on_text))
    return turn, pieces


def test_the_spoken_stream_reads_the_json_text_as_it_comes() -> None:
    from humanwire.server.voice import SpokenStream

    stream = SpokenStream()
    chunks = [
        '```json\n{"act',
        'ion": "say", "te',
        'xt": "Hel',
        "lo \\",
        '"Sam\\u00',
        "e9\\",
        'n!"}',
    ]
    pieces = [stream.feed(chunk) for chunk in chunks]
    assert pieces == ["", "", "Hel", "lo ", '"Sam', "é", " !"]
    plain = SpokenStream()
    assert [plain.feed(c) for c in ["  Hi **there**", ' friend {"x": 1}']] == [
        "Hi there",
        " friend ",
    ]


def test_an_opening_streamed_hands_out_its_words_before_the_end() -> None:
    from humanwire.testing.voice import PacedChatModel

    text = "Hi Sam, this is Dana from Acme Dental. Can you still make Tuesday?"
    model = PacedChatModel(
        lambda _: f'{{"action": "say", "text": "{text}"}}', first_token=0, per_token=0
    )
    turn, pieces = stream_turn(model)
    assert turn == Turn("say", text)
    assert len(pieces) > 5 and "".join(pieces) == text


def test_a_streamed_turn_keeps_its_guard_rails() -> None:
    # a transfer with nobody to transfer to: what was said, then why nobody comes
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content='{"action": "transfer", "text": "Connecting you."}')])
    )
    turn, pieces = stream_turn(model)
    assert turn.action == "say" and turn.text.startswith("Connecting you. I'm sorry")
    assert "".join(pieces) == turn.text
    # a model that fails: the fixed goodbye, handed out too
    turn, pieces = stream_turn(BrokenModel())
    assert turn == Turn("end", FALLBACK_GOODBYE) and pieces == [FALLBACK_GOODBYE]
    # nothing to say: the fallback sentence
    turn, pieces = stream_turn(
        GenericFakeChatModel(messages=iter([AIMessage(content='{"action": "say"}')]))
    )
    assert pieces == [turn.text] and turn.text
