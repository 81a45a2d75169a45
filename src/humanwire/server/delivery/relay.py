"""Real-time calls over ConversationRelay (``[voice] mode = "relay"``): the carrier does
speech-to-text and text-to-speech and exchanges JSON messages with the service over one
WebSocket per call. The turns are ``CallTurns.agent_turn``'s, the same as over markup;
this module only speaks the relay's messages (no HTTP, no WebSocket here: the route hands
it ``receive`` and ``send``).

Twilio's ConversationRelay and Telnyx's (the same verb and messages) are one session
here; what differs per carrier is a ``RelayDialect`` (the fields of the messages sent to
it, how the markup names a voice) and the handshake's check (the carrier's routes).

From the carrier: ``setup`` (first, names the ``callSid``), ``prompt`` (``voicePrompt``;
``last`` marks the final transcript of an utterance), ``interrupt`` (the person spoke
over the agent: ``utteranceUntilInterrupt`` is what they heard), ``dtmf`` (``digit``),
``error``. To the carrier: ``text`` (``token``, ``last``; Twilio's also
``interruptible``) as the model writes, ``end`` (Twilio's with ``handoffData``) when the
agent transfers or ends the call; the carrier then asks the ``<Connect>``'s action URL
what follows (``CallTurns._relay_ended``).

- The socket's URL names the call's interaction (``?interaction=``, signed or tokened with
  it): a ``setup`` naming another call (or a URL naming none) is closed, so one call's
  handshake never opens another's session.
- A socket that sends no ``setup`` within ``setup_timeout`` seconds is closed; the carrier
  then ends the call (nothing was said: ``no_answer``, with its summary).
- A final ``prompt`` cancels the agent's turn still running and is the next turn; an
  ``interrupt`` cancels the model's stream, and the transcript keeps what was heard.
- Digits are one answer once the person stops pressing (``DTMF_PAUSE``) or presses ``#``.
- Nothing heard for ``relay_silence`` seconds after the agent spoke is a silent answer,
  as a ``<Gather>``'s timeout is. After an ``interrupt`` the person is speaking: the
  final ``prompt`` comes when they stop, so the wait is ``SPEAKING_TIMEOUT`` longer
  (silence then: the interrupt was a noise that transcribed to nothing).
- The call's state (the transcript) is stored when the agent ends or transfers the call
  and when the socket closes, not after every turn: a socket stays on one process, and a
  write per turn of every call was what slowed the others' turns most. The carrier's
  action request and status callback, which follow the socket's close at once, wait on
  this process for that last write (``CallTurns.relay_settled``).
- A frame that is not a JSON object, a message of an unknown type or a missing field is
  ignored (logged at debug); a socket that names no known call is closed. The socket
  closing ends nothing by itself: the carrier then asks the action URL (the call hangs
  up) and its status callback writes the summary, as in gather mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .call_turns import CallTurns

__all__ = [
    "DTMF_PAUSE",
    "SETUP_TIMEOUT",
    "SPEAKING_TIMEOUT",
    "TELNYX_RELAY",
    "TWILIO_RELAY",
    "RelayClosed",
    "RelayDialect",
    "RelaySession",
]

logger = logging.getLogger("humanwire.providers")

SETUP_TIMEOUT: Final = 10.0
"""Seconds a new socket has to send its ``setup``."""
DTMF_PAUSE: Final = 1.5
"""Seconds after the last key before the digits are taken as the answer."""
SPEAKING_TIMEOUT: Final = 30.0
"""Seconds the person may go on speaking after an ``interrupt`` before its silence timer
counts (their final transcript comes when they stop)."""
MAX_IGNORED: Final = 100
"""Frames a session ignores (malformed, unknown) before it closes: a loop that only ever
gets garbage is not a call."""

Receive = Callable[[], Awaitable[str | None]]
"""The next text frame; None when the socket closed."""
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class RelayDialect:
    """What differs between carriers' ConversationRelay once the socket is open: the
    fields of the messages sent to the carrier (what it reads from us is the same), and
    how the ``<ConversationRelay>`` markup names a voice."""

    carrier: str
    text_interruptible: bool
    """``text`` carries ``interruptible`` (Twilio); otherwise the markup's
    ``interruptible`` attribute alone decides (Telnyx publishes ``token``, ``last``)."""
    end_handoff: bool
    """``end`` carries ``handoffData`` (Twilio); Telnyx publishes a bare ``end``. The
    service never reads it back: what follows the session is decided by the stored
    state (``CallTurns._relay_ended``)."""
    polly_provider_attribute: bool
    """A Polly voice is written ``ttsProvider="Amazon" voice="Joanna"`` (Twilio), or
    ``voice="Polly.Joanna"`` as the carrier's ``<Say>`` takes it (Telnyx)."""

    def text(self, token: str, *, last: bool) -> dict[str, Any]:
        message: dict[str, Any] = {"type": "text", "token": token, "last": last}
        if self.text_interruptible and not last:
            message["interruptible"] = True
        return message

    def end(self, reason: str) -> dict[str, Any]:
        if self.end_handoff:
            return {"type": "end", "handoffData": json.dumps({"reason": reason})}
        return {"type": "end"}


TWILIO_RELAY: Final = RelayDialect(
    "twilio", text_interruptible=True, end_handoff=True, polly_provider_attribute=True
)
TELNYX_RELAY: Final = RelayDialect(
    "telnyx", text_interruptible=False, end_handoff=False, polly_provider_attribute=False
)


class RelayClosed(Exception):
    """The socket went away while the session was sending."""


class RelaySession:
    """One call's socket: ``await RelaySession(turns, receive, send, interaction=…).run()``.
    ``interaction``: the interaction the socket's URL names (the handshake's check
    covered it); a ``setup`` for another call (or a URL naming none) closes the socket.
    ``setup_timeout``:
    seconds the socket has to send its ``setup`` (the call's ``CallTurns`` decides by
    default)."""

    def __init__(
        self,
        turns: CallTurns,
        receive: Receive,
        send: Send,
        *,
        interaction: str,
        setup_timeout: float | None = None,
    ) -> None:
        self.turns = turns
        self.dialect = turns.relay_dialect
        self.interaction = interaction
        self.setup_timeout = turns.relay_setup_timeout if setup_timeout is None else setup_timeout
        self._receive = receive
        self._frame = send
        self.sid = ""
        self.state: dict[str, Any] | None = None
        self._turn: asyncio.Task[None] | None = None
        self._spoken: list[str] = []
        """The tokens of the turn being spoken (what an interrupt cuts)."""
        self._digits = ""
        self._digits_at = 0.0
        self._listening_since: float | None = None
        self._ended = False
        self._ignored = 0
        self.first_token_at: float | None = None
        """When the current turn's first token went out (the benchmark reads it)."""

    # -- the loop -------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            setup = await asyncio.wait_for(self._next_message(), self.setup_timeout)
        except TimeoutError:
            logger.info("relay: no setup within %g s; closing", self.setup_timeout)
            return
        if setup is None or setup.get("type") != "setup" or not await self._open(setup):
            return
        self.turns.relay_opened(self.sid)
        try:
            await self._converse()
        finally:
            try:
                await self._stop_turn()
                if self.state is not None:
                    await self.turns.save_state(self.sid, self.state)
            finally:
                self.turns.relay_stored(self.sid)

    async def _open(self, setup: dict[str, Any]) -> bool:
        sid = setup.get("callSid")
        state = await self.turns.relay_state(sid) if isinstance(sid, str) else None
        if state is None:
            logger.info("relay: a socket for a call this service does not know; closing")
            return False
        if not self.interaction or state.get("interactionId") != self.interaction:
            logger.info("relay: a socket opened for another call than its setup's; closing")
            return False
        self.sid, self.state = str(sid), state
        return True

    async def _converse(self) -> None:
        assert self.state is not None
        if not self.state["started"]:
            self._start_turn()
        else:
            self._listen()
        # One read stays pending across the timers (a read is never cancelled); the
        # loop also wakes when the agent's turn ends, so the silence timer starts then.
        reading: asyncio.Task[Any] = asyncio.ensure_future(self._next_message())
        try:
            while True:
                waiting: set[asyncio.Future[Any]] = {reading}
                if self._turn is not None and not self._turn.done():
                    waiting.add(self._turn)
                done, _ = await asyncio.wait(
                    waiting, timeout=self._wait_time(), return_when=asyncio.FIRST_COMPLETED
                )
                if reading not in done:
                    if not done:
                        self._on_timeout()
                    continue
                message = reading.result()
                if message is None:
                    return  # the socket closed
                reading = asyncio.ensure_future(self._next_message())
                await self._on_message(message)
                if self._ignored > MAX_IGNORED:
                    logger.info("relay: %d frames ignored; closing", self._ignored)
                    return
        finally:
            if not reading.done():
                reading.cancel()

    async def _on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "prompt":
            self._on_prompt(message)
        elif kind == "interrupt":
            await self._on_interrupt(message)
        elif kind == "dtmf":
            self._on_dtmf(message)
        elif kind == "error":
            logger.info("relay: the carrier reported %s", str(message.get("description"))[:200])
        else:
            self._ignore(f"a message of type {str(kind)[:40]!r}")

    async def _next_message(self) -> dict[str, Any] | None:
        """The next JSON object; None when the socket closed (or sent only garbage)."""
        while True:
            frame = await self._receive()
            if frame is None:
                return None
            try:
                message = json.loads(frame)
            except ValueError:
                message = None
            if isinstance(message, dict):
                return message
            self._ignore("a frame that is not a JSON object")
            if self._ignored > MAX_IGNORED:
                return None

    def _ignore(self, what: str) -> None:
        self._ignored += 1
        logger.debug("relay %s: ignored %s", self.sid or "(no call)", what)

    # -- timers: silence and digits -----------------------------------------------------
    def _listen(self, speaking: float = 0.0) -> None:
        """The silence timer starts (``speaking``: seconds later, the person being heard)."""
        self._listening_since = time.monotonic() + speaking

    def _wait_time(self) -> float | None:
        deadlines: list[float] = []
        if self._digits:
            deadlines.append(self._digits_at + DTMF_PAUSE)
        if self._listening_since is not None and not self._ended:
            deadlines.append(self._listening_since + self.turns.relay_silence)
        if not deadlines:
            return None
        return max(min(deadlines) - time.monotonic(), 0.0)

    def _on_timeout(self) -> None:
        now = time.monotonic()
        if self._digits and now >= self._digits_at + DTMF_PAUSE:
            digits, self._digits = self._digits, ""
            self._answer(digits)
        elif (
            self._listening_since is not None
            and not self._ended
            and now >= self._listening_since + self.turns.relay_silence
        ):
            self._answer("")

    # -- the person's side ----------------------------------------------------------------
    def _on_prompt(self, message: dict[str, Any]) -> None:
        if message.get("last") is False:
            return  # a partial transcript: the final one follows
        heard = message.get("voicePrompt")
        if not isinstance(heard, str):
            self._ignore("a prompt without voicePrompt")
            return
        self._answer(heard.replace("\x00", "").strip()[:4000])

    async def _on_interrupt(self, message: dict[str, Any]) -> None:
        heard = message.get("utteranceUntilInterrupt")
        running = self._turn is not None and not self._turn.done()
        await self._stop_turn()
        assert self.state is not None
        transcript: list[list[str]] = self.state["transcript"]
        cut = heard.strip() if isinstance(heard, str) else "".join(self._spoken).strip()
        if running:
            transcript.append(["agent", cut])
            self.state["started"] = True
        elif transcript and transcript[-1][0] == "agent" and isinstance(heard, str):
            transcript[-1][1] = cut  # the turn was written whole; this much was heard
        self._listen(speaking=SPEAKING_TIMEOUT)  # they are speaking: not silence yet

    def _on_dtmf(self, message: dict[str, Any]) -> None:
        digit = message.get("digit")
        if not isinstance(digit, str) or len(digit) != 1 or digit not in "0123456789*#ABCD":
            self._ignore("a dtmf message without a digit")
            return
        if digit == "#":
            digits, self._digits = self._digits, ""
            self._answer(digits or "#")
            return
        self._digits += digit
        self._digits_at = time.monotonic()
        self._listening_since = None

    def _answer(self, heard: str) -> None:
        """The person's answer (``""``: silence) is the next turn."""
        if self._ended or self.state is None:
            return
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()  # spoken over: the next turn answers what they said
            self.state["transcript"].append(["agent", "".join(self._spoken).strip()])
            self.state["started"] = True
        self.state["transcript"].append(["callee", heard])
        self._start_turn()

    # -- the agent's side -----------------------------------------------------------------
    def _start_turn(self) -> None:
        self._listening_since = None
        self._spoken = []
        self.first_token_at = None
        self._turn = asyncio.get_running_loop().create_task(self._agent_turn())

    async def _stop_turn(self) -> None:
        task, self._turn = self._turn, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RelayClosed):
                await task

    async def _agent_turn(self) -> None:
        assert self.state is not None
        try:
            record = await self.turns.interaction(self.state)
            if record is None or record.status != "pending":
                await self._end("end")
                return
            _, action = await self.turns.agent_turn(self.state, record, on_text=self._token)
            await self._send(self.dialect.text("", last=True))
            if action in ("end", "transfer", "voicemail"):
                # stored before the carrier asks the action what follows (the transfer),
                # which need not wait for the socket to close (``relay_settled``)
                await self.turns.save_state(self.sid, self.state)
                self.turns.relay_stored(self.sid)
                await self._end(action)
            else:
                self._listen()
        except RelayClosed:
            return
        except Exception:
            # the call must not hang on a turn that failed: say goodbye and end it
            logger.exception("relay %s: a turn failed; ending the call", self.sid)
            try:
                await self._end("end")
            except RelayClosed:
                return

    async def _token(self, token: str) -> None:
        if not token:
            return
        if self.first_token_at is None:
            self.first_token_at = time.perf_counter()
        self._spoken.append(token)
        await self._send(self.dialect.text(token, last=False))

    async def _end(self, reason: str) -> None:
        self._ended = True
        await self._send(self.dialect.end(reason))

    async def _send(self, message: dict[str, Any]) -> None:
        try:
            await self._frame(message)
        except Exception as exc:  # the socket went away: whatever the server raised
            raise RelayClosed(type(exc).__name__) from None
