"""TwiML for the voice agent's turns, built with the official ``twilio`` package.

Each builder returns a complete ``<Response>`` document as a string. Text goes through
:class:`twilio.twiml.voice_response.VoiceResponse`, which escapes it for XML; characters
XML cannot carry at all (control characters) are dropped first.

``twilio`` is imported when a builder runs, never when this module is imported (extra
``humanwire[twilio]``).

Voices: the request's ``voice`` is ``female`` (default), ``male`` or a provider voice
name. :func:`resolve_voice` maps ``female`` / ``male`` to an Amazon Polly voice that Twilio
offers for the call's language (:data:`VOICE_TABLE`) and passes any other value through
unchanged. The builders resolve the voice themselves, so they take the request's values
as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from twilio.twiml.voice_response import (  # type: ignore[import-untyped]
        VoiceResponse,
    )

__all__ = [
    "DEFAULT_LANGUAGE",
    "DEFAULT_VOICE",
    "VOICE_TABLE",
    "connect_relay",
    "hangup",
    "provider_voice",
    "resolve_voice",
    "say_and_dial",
    "say_and_hangup",
    "say_and_listen",
    "silence_url",
    "voicemail",
]

DEFAULT_LANGUAGE: Final = "en-US"
DEFAULT_VOICE: Final = "female"

Gender = Literal["female", "male"]

#: ``female`` / ``male`` → the Amazon Polly voice Twilio's ``<Say voice=...>`` takes, per
#: language. Standard (not neural) Polly voices, spelled without accents (Twilio accepts
#: ``Polly.Celine`` as well as ``Polly.Céline``). Checked against Twilio's Text-to-Speech
#: voice list and Amazon Polly's "Available voices" table.
VOICE_TABLE: Final[Mapping[str, Mapping[Gender, str]]] = MappingProxyType(
    {
        "en-US": MappingProxyType({"female": "Polly.Joanna", "male": "Polly.Matthew"}),
        "en-GB": MappingProxyType({"female": "Polly.Amy", "male": "Polly.Brian"}),
        "en-AU": MappingProxyType({"female": "Polly.Nicole", "male": "Polly.Russell"}),
        "fr-FR": MappingProxyType({"female": "Polly.Celine", "male": "Polly.Mathieu"}),
        "de-DE": MappingProxyType({"female": "Polly.Vicki", "male": "Polly.Hans"}),
        "es-ES": MappingProxyType({"female": "Polly.Lucia", "male": "Polly.Enrique"}),
        "es-US": MappingProxyType({"female": "Polly.Lupe", "male": "Polly.Miguel"}),
        "it-IT": MappingProxyType({"female": "Polly.Carla", "male": "Polly.Giorgio"}),
        "pt-BR": MappingProxyType({"female": "Polly.Camila", "male": "Polly.Ricardo"}),
        "pt-PT": MappingProxyType({"female": "Polly.Ines", "male": "Polly.Cristiano"}),
        "ja-JP": MappingProxyType({"female": "Polly.Mizuki", "male": "Polly.Takumi"}),
        "nl-NL": MappingProxyType({"female": "Polly.Lotte", "male": "Polly.Ruben"}),
        "da-DK": MappingProxyType({"female": "Polly.Naja", "male": "Polly.Mads"}),
        "pl-PL": MappingProxyType({"female": "Polly.Ewa", "male": "Polly.Jacek"}),
        "ru-RU": MappingProxyType({"female": "Polly.Tatyana", "male": "Polly.Maxim"}),
    }
)

_BY_LOWER: Final = {locale.lower(): locale for locale in VOICE_TABLE}
# A locale the table lacks but whose language it has (``fr-CA``, ``en-IN``) takes the
# table's first locale of that language (dict order above); Spanish outside Spain
# (``es-MX``, ``es-419``) takes the Latin American ``es-US`` voices.
_BY_LANGUAGE: Final[dict[str, str]] = {"es": "es-US"}
for _locale in VOICE_TABLE:
    _BY_LANGUAGE.setdefault(_locale.split("-")[0].lower(), _locale)

# Characters XML 1.0 cannot carry (escaping does not help): C0 controls but tab, LF, CR.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def resolve_voice(voice: str | None, language: str | None) -> tuple[str, str]:
    """``(voice, say_language)`` for a ``<Say>``.

    ``female`` / ``male`` (any case) map through :data:`VOICE_TABLE`: the exact locale
    (``en-gb`` and ``en_GB`` match ``en-GB``), else the table's locale of the same language
    (``fr-CA`` → ``fr-FR``; Spanish outside Spain → ``es-US``), else ``en-US``. The
    returned language is then the table's locale, so that voice and language agree
    (Twilio's docs warn that a ``<Say>`` with a voice/language mismatch may fail).
    Any other voice is passed through unchanged, with the requested language.
    ``None`` / empty values take the defaults (``female``, ``en-US``).
    """
    wanted_voice = (voice or "").strip() or DEFAULT_VOICE
    wanted_language = (language or "").strip() or DEFAULT_LANGUAGE
    lowered = wanted_voice.lower()
    if lowered not in ("female", "male"):
        return wanted_voice, wanted_language
    gender: Gender = "female" if lowered == "female" else "male"
    key = wanted_language.replace("_", "-").lower()
    locale = _BY_LOWER.get(key) or _BY_LANGUAGE.get(key.split("-")[0]) or DEFAULT_LANGUAGE
    return VOICE_TABLE[locale][gender], locale


def provider_voice(voice: str, language: str) -> str:
    """The ``<Say voice=...>`` value for a request's ``voice`` and ``language``.

    ``female`` / ``male`` become the Polly voice of :data:`VOICE_TABLE` for the language
    (unknown language: the ``en-US`` voice of that gender); any other value is returned
    unchanged.
    """
    return resolve_voice(voice, language)[0]


def silence_url(action_url: str) -> str:
    """``action_url`` with ``silence=1`` added: where a turn without speech comes back."""
    separator = "&" if "?" in action_url else "?"
    return f"{action_url}{separator}silence=1"


def _clean(text: str) -> str:
    return _XML_INVALID.sub("", text).strip()


def _response() -> VoiceResponse:
    try:
        from twilio.twiml.voice_response import (  # type: ignore[import-untyped]
            VoiceResponse,
        )
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "Building TwiML needs the twilio package: pip install 'humanwire[twilio]'"
        ) from exc
    return VoiceResponse()


def _say(parent: Any, text: str, voice: str | None, language: str | None) -> None:
    spoken = _clean(text)
    if not spoken:
        return
    say_voice, say_language = resolve_voice(voice, language)
    parent.say(spoken, voice=say_voice, language=say_language)


def _xml(response: VoiceResponse) -> str:
    return str(response.to_xml(xml_declaration=True))


def say_and_listen(
    text: str,
    *,
    action_url: str,
    voice: str | None = DEFAULT_VOICE,
    language: str | None = DEFAULT_LANGUAGE,
    speech_timeout: str | int = "auto",
    timeout: int = 5,
) -> str:
    """Say ``text`` inside a speech ``<Gather>`` and post what the callee says.

    ``<Gather input="speech" action=action_url method="POST" language=...
    speechTimeout=... timeout=...><Say .../></Gather>`` followed by
    ``<Redirect method="POST">action_url?silence=1</Redirect>``: Twilio goes on to the
    next verb when the Gather hears nothing, so silence comes back to ``action_url`` too,
    marked ``silence=1`` (and without ``SpeechResult``). ``timeout`` is the seconds Twilio
    waits for speech to start; ``speech_timeout`` the pause that ends it (``"auto"``).
    Gather's ``language`` (speech recognition) is the requested one; the Say's follows
    :func:`resolve_voice`.
    """
    response = _response()
    gather = response.gather(
        input="speech",
        action=action_url,
        method="POST",
        language=(language or "").strip() or DEFAULT_LANGUAGE,
        speech_timeout=speech_timeout,
        timeout=timeout,
    )
    _say(gather, text, voice, language)
    response.redirect(silence_url(action_url), method="POST")
    return _xml(response)


def say_and_hangup(
    text: str,
    *,
    voice: str | None = DEFAULT_VOICE,
    language: str | None = DEFAULT_LANGUAGE,
) -> str:
    """``<Say>text</Say><Hangup/>``: the last words of a call."""
    response = _response()
    _say(response, text, voice, language)
    response.hangup()
    return _xml(response)


def say_and_dial(
    text: str,
    number: str,
    *,
    action_url: str | None = None,
    caller_id: str | None = None,
    voice: str | None = DEFAULT_VOICE,
    language: str | None = DEFAULT_LANGUAGE,
) -> str:
    """``<Say>text</Say><Dial>number</Dial>``: hand the call to the transfer number.

    With ``action_url``, Twilio posts the ``<Dial>``'s outcome (``DialCallStatus``) there
    when the transferred leg ends; without, the call ends with it. ``caller_id`` sets the
    number the transfer target sees (Twilio's default: the call's own caller id).
    """
    target = number.strip()
    if not target:
        raise ValueError("say_and_dial needs a number to dial")
    response = _response()
    _say(response, text, voice, language)
    attributes: dict[str, Any] = {}
    if action_url is not None:
        attributes["action"] = action_url
        attributes["method"] = "POST"
    if caller_id is not None:
        attributes["caller_id"] = caller_id
    response.dial(target, **attributes)
    return _xml(response)


def hangup() -> str:
    """``<Response><Hangup/></Response>``."""
    response = _response()
    response.hangup()
    return _xml(response)


def voicemail(
    text: str,
    *,
    voice: str | None = DEFAULT_VOICE,
    language: str | None = DEFAULT_LANGUAGE,
    pause: int = 1,
) -> str:
    """The message for an answering machine: ``<Pause>`` (``pause`` seconds, so the beep
    passes; ``0`` leaves it out), ``<Say>text</Say>``, ``<Hangup/>``."""
    response = _response()
    if pause > 0:
        response.pause(length=pause)
    _say(response, text, voice, language)
    response.hangup()
    return _xml(response)


def connect_relay(
    relay_url: str,
    *,
    action_url: str,
    welcome_greeting: str | None = None,
    voice: str | None = DEFAULT_VOICE,
    language: str | None = DEFAULT_LANGUAGE,
    polly_provider_attribute: bool = True,
) -> str:
    """``<Connect action=action_url><ConversationRelay url=relay_url .../></Connect>``:
    the call talks over the WebSocket at ``relay_url`` (real-time voice, the carrier
    doing speech-to-text and text-to-speech); when the session ends, the carrier asks
    ``action_url`` for what comes next. A Polly voice (``female`` / ``male`` resolve to
    one) is given as Amazon's voice name with ``ttsProvider="Amazon"`` (Twilio), or
    without ``polly_provider_attribute`` as ``Polly.Name``, the form Telnyx's TeXML
    takes; DTMF is on and the agent's speech may be interrupted."""
    say_voice, say_language = resolve_voice(voice, language)
    response = _response()
    connect = response.connect(action=action_url, method="POST")
    attributes: dict[str, Any] = {
        "url": relay_url,
        "language": say_language,
        "dtmf_detection": True,
        "interruptible": "any",
    }
    if say_voice.startswith("Polly.") and polly_provider_attribute:
        attributes["tts_provider"] = "Amazon"
        attributes["voice"] = say_voice.removeprefix("Polly.")
    else:
        attributes["voice"] = say_voice
    greeting = _clean(welcome_greeting or "")
    if greeting:
        attributes["welcome_greeting"] = greeting
    connect.conversation_relay(**attributes)
    return _xml(response)
