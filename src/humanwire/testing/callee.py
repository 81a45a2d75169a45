"""What a person at a phone number does when called, for the carriers' contract fakes
(Twilio's and Telnyx's alike): answer or not, say what, interrupt the agent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Answer", "BargeIn", "CalleeScript"]

Answer = Literal["human", "machine", "no-answer", "busy", "failed"]
"""How a call is taken."""


@dataclass(frozen=True)
class BargeIn:
    """A callee's answer spoken over the agent: over ConversationRelay, once the agent's
    next turn has sent its first words, the fake sends ``interrupt`` (what was heard so
    far) and then ``text`` as the prompt. Over ``<Gather>`` it is an ordinary answer (a
    Gather's ``<Say>`` is cut by speech anyway)."""

    text: str
    speaking: float = 0.0
    """Over ConversationRelay: seconds from the ``interrupt`` (the person starts
    speaking) to the final ``prompt`` (they stop), at the least."""


@dataclass
class CalleeScript:
    """How the person at a number takes a call.

    ``answer``: ``human`` (speaks ``says`` in order), ``machine`` (an answering machine:
    ``AnsweredBy`` is a machine when detection was asked for, nothing is said back),
    ``no-answer``, ``busy``, ``failed``. ``says``: one entry per ``<Gather>``: a
    sentence (sent as ``SpeechResult``; as ``Digits`` to a DTMF-only Gather), or None
    for silence (the Gather times out: TwiML goes on after it). When the script runs
    out, or after ``hang_up_after`` Gathers, the callee hangs up.

    Over ConversationRelay each entry answers one of the agent's turns: a sentence is a
    final ``prompt``, digits (``[0-9*#]+``) are ``dtmf`` messages, None is silence
    (nothing sent), a :class:`BargeIn` interrupts the agent's next turn."""

    answer: Answer = "human"
    says: Sequence[str | BargeIn | None] = ()
    hang_up_after: int | None = None
    seconds_per_turn: float = 0.0
    """How long each answer takes (speaking, or the Gather's silence timeout)."""
    ring_seconds: float = 0.0
    """How long the phone rings before it is answered (or given up on)."""
    confidence: float = 0.92
