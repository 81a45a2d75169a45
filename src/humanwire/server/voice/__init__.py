"""The voice agent of the service: a provider-independent brain and the TwiML around it.

The turn protocol (no HTTP here; the provider routes drive it):

1. The callee answers: :meth:`VoiceAgent.opening` gives the first :class:`Turn`; an
   answering machine gets :meth:`VoiceAgent.voicemail` and :func:`voicemail` instead.
2. A ``say`` turn becomes :func:`say_and_listen`: a speech ``<Gather>`` whose result is
   posted to the turn URL, and a ``<Redirect>`` to the same URL with ``silence=1`` when
   nothing was heard. The engine appends ``("callee", speech)`` — ``""`` for silence — to
   the transcript and asks :meth:`VoiceAgent.next_turn` again.
3. ``transfer`` becomes :func:`say_and_dial` to the call's ``transferTo``; ``end``
   becomes :func:`say_and_hangup`.
4. When the call is over, :meth:`VoiceAgent.summarize` writes
   ``call.conversation.ended``'s ``summary``.

Inbound calls to a reserved number get :meth:`VoiceAgent.inbound_greeting` and the
deterministic :meth:`VoiceAgent.inbound_next`: take a message, share nothing.

Importing this package imports neither LangChain nor twilio; they load when a model is
called or loaded (``humanwire[voice]``) and when TwiML is built (``humanwire[twilio]``).
"""

from __future__ import annotations

from .agent import (
    FALLBACK_GOODBYE,
    INBOUND_GREETING,
    OnText,
    SpokenStream,
    Transcript,
    Turn,
    VoiceAgent,
    load_chat_model,
)
from .twiml import (
    VOICE_TABLE,
    connect_relay,
    hangup,
    provider_voice,
    resolve_voice,
    say_and_dial,
    say_and_hangup,
    say_and_listen,
    silence_url,
    voicemail,
)

__all__ = [
    "FALLBACK_GOODBYE",
    "INBOUND_GREETING",
    "VOICE_TABLE",
    "OnText",
    "SpokenStream",
    "Transcript",
    "Turn",
    "VoiceAgent",
    "connect_relay",
    "hangup",
    "load_chat_model",
    "provider_voice",
    "resolve_voice",
    "say_and_dial",
    "say_and_hangup",
    "say_and_listen",
    "silence_url",
    "voicemail",
]
