"""Calls run turn by turn by the voice agent, over TwiML or TeXML (Telnyx's
Twilio-compatible markup and callback parameters): what both carriers share, written once.

A carrier's voice class places the call (its REST API) and hands each markup request
(``turn``) and status callback (``status``) here. Each turn's speech is added to the
transcript kept in the store (``provider_state``, keyed by the carrier's call id under the
carrier's ``scope``), so a turn may land on any process and survive a restart. The call's
interaction id travels in the URLs the carrier calls back, so the first turn never depends
on the create request's answer having been stored; where the carrier's signature does not
cover the URL (Telnyx), the URLs carry the service's token of the interaction beside it
(``url_token``) and the carrier's voice class believes the interaction only with it.

Outcomes (docs/providers.md): a person who spoke → ``completed`` (or ``transferred`` after a
``<Dial>``); no answer, busy, failed, canceled, an answering machine (the voicemail the
prompt describes is left) or a call where nobody said anything → ``no_answer``, "human did
not respond". The summary is the chat model's, written in the background once the carrier
reports the end, so the status callback is answered at once.

Inbound calls to a reserved number get the voicemail-style agent: it takes a message and
shares nothing; the summary reaches the webhooks as ``call.conversation.ended``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from humanwire.types import CallOutcome, Speaker

from .base import Outbound, Sent
from .jobs import ProviderJobs
from .relay import SETUP_TIMEOUT, TWILIO_RELAY, Receive, RelayDialect, RelaySession, Send

if TYPE_CHECKING:
    from ..store.records import InteractionRecord
    from ..voice import OnText, VoiceAgent
    from .port import InboundPort

__all__ = ["MACHINE", "RELAY_SOCKET_SCOPE", "UNANSWERED", "CallTurns"]

logger = logging.getLogger("humanwire.providers")

UNANSWERED = {
    "busy": "the line was busy",
    "no-answer": "nobody picked up",
    "failed": "the call could not be connected",
    "canceled": "the call was canceled before it was answered",
}
MACHINE = ("machine_start", "machine_end_beep", "machine_end_silence", "machine_end_other")
RELAY_SOCKET_SCOPE = "relay-socket"
"""interaction id → the relay socket the call took (``CallTurns.take_relay``)."""


class CallTurns:
    """The turns and the end of a carrier's calls; ``place`` is the carrier's."""

    def __init__(
        self,
        inbound: InboundPort,
        agent: VoiceAgent | None,
        *,
        scope: str,
        voice_url: str,
        status_url: str,
        jobs: ProviderJobs,
        relay_url: str | None = None,
        relay_silence: float = 5.0,
        relay_setup_timeout: float = SETUP_TIMEOUT,
        relay_dialect: RelayDialect = TWILIO_RELAY,
        url_token: Callable[[Mapping[str, str]], str] | None = None,
    ) -> None:
        self.jobs = jobs
        self.url_token = url_token
        """The service's token of a URL's query (the interaction, the turn), added to
        every URL the carrier is given (``interaction_query``); None: the carrier signs
        its URLs."""
        self.relay_url = relay_url
        """The relay WebSocket's ``wss://`` URL in relay mode (``[voice] mode``); None:
        calls run turn by turn over markup (``<Gather>``)."""
        self.relay_silence = relay_silence
        """Seconds of silence after the agent's turn before the relay counts a silent
        answer (a ``<Gather>``'s ``timeout``)."""
        self.relay_setup_timeout = relay_setup_timeout
        """Seconds a relay socket has to send its ``setup`` before it is closed."""
        self.relay_dialect = relay_dialect
        """The carrier's relay messages and markup (``relay.RelayDialect``)."""
        self.inbound = inbound
        self.agent = agent
        self.scope = scope
        self.voice_url = voice_url
        self.status_url = status_url
        self._tasks: set[asyncio.Task[None]] = set()
        self._relays: dict[str, asyncio.Event] = {}
        """Calls whose relay socket is open on this process: set once the session has
        stored the call's state (``relay_settled``)."""

    async def aclose(self) -> None:
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5.0)

    async def place(self, item: Outbound) -> Sent:
        raise NotImplementedError

    def interaction_query(self, interaction_id: str, **place: str) -> str:
        """The query naming the call's interaction (and ``place``: the turn, the relay's
        end) in the URLs the carrier calls, with ``url_token``'s token of it when there
        is one."""
        named = {"interaction": interaction_id, **place}
        query = urlencode(named)
        if self.url_token is not None:
            query += f"&token={self.url_token(named)}"
        return query

    async def time_limit(self, item: Outbound) -> int | None:
        """``/phone/call`` is over after five minutes: the carrier hangs up a little after."""
        if item.interaction_id is None:
            return None
        record = await self.inbound.interaction(item.interaction_id)
        if record is None or not record.request.get("_phone"):
            return None
        return int(self.inbound.phone_call_limit) + 30

    async def hang_up(self, sid: str) -> None:
        """Ends a call still running (the skill's five minutes passed): a stored job,
        retried until the carrier takes it, so a slow carrier holds nothing up."""
        await self.jobs.add("hang_up", sid)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- state kept between turns -----------------------------------------------------
    async def _load(self, sid: str) -> dict[str, Any] | None:
        return await self.inbound.state.get_provider_state(self.scope, sid)

    async def _save(self, sid: str, state: dict[str, Any]) -> None:
        await self.inbound.state.put_provider_state(self.scope, sid, state, time.time())

    async def _state(
        self, sid: str, params: Mapping[str, str], query: Mapping[str, str], *, create: bool
    ) -> dict[str, Any] | None:
        """The call's state; on its first turn, built from the interaction named in the
        URL (outbound) or opened for the reserved number called (inbound). None for a
        call this service does not know (answered harmlessly)."""
        state = await self._load(sid) if sid else None
        if state is not None or not sid:
            return state
        interaction_id = query.get("interaction")
        if interaction_id:
            record = await self.inbound.interaction(interaction_id)
            if record is None or record.kind != "call":
                return None
            state = {"interactionId": record.id, "direction": "outbound"}
        elif create and params.get("Direction", "").startswith("inbound"):
            called = params.get("To", "")
            number = await self.inbound.number_by_phone(called)
            if number is None or self.agent is None:
                return None
            record = await self.inbound.open_inbound_call(
                number.account_id, from_addr=params.get("From", ""), to_addr=called
            )
            state = {"interactionId": record.id, "direction": "inbound"}
        else:
            return None
        state.update(transcript=[], started=False, transferred=False, voicemail=None)
        return state

    # -- a markup turn (TwiML / TeXML) --------------------------------------------------
    async def turn(self, params: Mapping[str, str], query: Mapping[str, str]) -> str:
        """The markup answering one of the carrier's requests for the call. Each answer
        names the next turn in its URLs (``turn=N``); a request for a turn already
        answered (the carrier retrying, or a replay) gets the same answer again and
        changes nothing. In relay mode a person who answers is connected to the relay
        WebSocket (``RelaySession`` runs the turns there); the session's end comes back
        here (``relay=ended``) for the transfer or the hang-up."""
        from ..voice import hangup, say_and_dial, say_and_hangup, say_and_listen, voicemail

        sid = params.get("CallSid", "")
        if query.get("relay") == "ended":
            await self.relay_settled(sid)
        state = await self._state(sid, params, query, create=True)
        if state is None:
            return say_and_hangup("Sorry, this number does not take calls. Goodbye.")
        if state.get("relay"):
            if query.get("relay") != "ended":
                return str(state.get("last") or hangup())
            return await self._relay_ended(state)
        if state["started"] and query.get("turn") != str(state.get("turn", 0)):
            return str(state.get("last") or hangup())
        record = await self.inbound.interaction(str(state["interactionId"]))
        if record is None or record.status != "pending" or self.agent is None:
            return hangup()
        request = record.request
        voice = str(request.get("voice") or "female")
        language = str(request.get("language") or "en-US")
        next_turn = int(state.get("turn", 0)) + 1
        action = f"{self.voice_url}?{self.interaction_query(record.id, turn=str(next_turn))}"
        answered_by = params.get("AnsweredBy", "")
        machine = not state["started"] and answered_by in (*MACHINE, "fax")
        if self.relay_url is not None and not state["started"] and not machine:
            markup = await self._connect(state, record, voice=voice, language=language)
            await self._save(sid, state)
            return markup
        if state["started"]:
            heard = "" if query.get("silence") else params.get("SpeechResult", "").strip()
            state["transcript"].append(["callee", heard])
        text, turn_action = await self.agent_turn(state, record, answered_by=answered_by)
        transfer_to = str(request.get("transferTo") or "") or None
        if turn_action == "voicemail":
            markup = voicemail(text, voice=voice, language=language)
        elif turn_action == "transfer" and transfer_to is not None:
            markup = say_and_dial(
                text, transfer_to, caller_id=record.from_addr, voice=voice, language=language
            )
        elif turn_action == "say":
            markup = say_and_listen(text, action_url=action, voice=voice, language=language)
        else:
            markup = say_and_hangup(text, voice=voice, language=language)
        state.update(started=True, turn=next_turn, last=markup)
        await self._save(sid, state)
        return markup

    async def agent_turn(
        self,
        state: dict[str, Any],
        record: InteractionRecord,
        *,
        answered_by: str = "",
        on_text: OnText | None = None,
    ) -> tuple[str, str]:
        """The agent's next turn, whatever carries it (markup or the relay): ``(text,
        action)`` with action ``say``, ``transfer``, ``end`` or ``voicemail``, the text
        added to ``state``'s transcript (the callee's words already are). With
        ``on_text``, the words are handed to it as the model writes them."""
        assert self.agent is not None
        request = record.request
        transcript: list[list[str]] = state["transcript"]
        prompt = str(request.get("prompt") or request.get("message") or "")
        transfer_to = str(request.get("transferTo") or "") or None
        if state["direction"] == "inbound":
            if not state["started"]:
                text = await self.agent.inbound_greeting()
                turn_action = "say"
                if on_text is not None:
                    await on_text(text)
            else:
                turn = await self.agent.inbound_next([tuple(t) for t in transcript])  # type: ignore[misc]
                text, turn_action = turn.text, turn.action
                if on_text is not None:
                    await on_text(text)
        elif not state["started"] and answered_by in (*MACHINE, "fax"):
            text = await self.agent.voicemail(prompt)
            state["voicemail"] = text
            turn_action = "voicemail"
        elif not state["started"]:
            turn = await self.agent.opening(
                prompt, transfer_available=transfer_to is not None, on_text=on_text
            )
            text, turn_action = turn.text, turn.action
        else:
            turn = await self.agent.next_turn(
                prompt,
                [tuple(t) for t in transcript],  # type: ignore[misc]
                transfer_available=transfer_to is not None,
                on_text=on_text,
            )
            text, turn_action = turn.text, turn.action
        transcript.append(["agent", text])
        if turn_action == "transfer" and transfer_to is not None:
            state["transferred"] = True
        state["started"] = True
        return text, turn_action

    # -- relay mode (ConversationRelay) -------------------------------------------------
    async def _connect(
        self, state: dict[str, Any], record: InteractionRecord, *, voice: str, language: str
    ) -> str:
        """The markup handing an answered call to the relay: an inbound call's fixed
        greeting is the welcome greeting (spoken at once); an outbound call's opening is
        streamed once the socket is up."""
        from ..voice import connect_relay

        assert self.relay_url is not None and self.agent is not None
        greeting = None
        if state["direction"] == "inbound":
            greeting, _ = await self.agent_turn(state, record)
        action = f"{self.voice_url}?{self.interaction_query(record.id, relay='ended')}"
        markup = connect_relay(
            self.relay_socket_url(record.id),
            action_url=action,
            welcome_greeting=greeting,
            voice=voice,
            language=language,
            polly_provider_attribute=self.relay_dialect.polly_provider_attribute,
        )
        state.update(relay=True, last=markup)
        return markup

    def relay_socket_url(self, interaction_id: str) -> str:
        """The socket the carrier opens for this call: the URL names the interaction, so
        the handshake's check covers it (Twilio signs the URL; Telnyx's adds a token)."""
        assert self.relay_url is not None
        return f"{self.relay_url}?{self.interaction_query(interaction_id)}"

    async def _relay_ended(self, state: dict[str, Any]) -> str:
        """What follows the relay session: the transfer the agent decided, or the end.
        The state decides, never the session's ``HandoffData`` (a replay could forge
        nothing but its own call's end)."""
        from ..voice import hangup, say_and_dial

        record = await self.inbound.interaction(str(state["interactionId"]))
        transfer_to = str(record.request.get("transferTo") or "") if record else ""
        if state.get("transferred") and transfer_to and record is not None:
            return say_and_dial("", transfer_to, caller_id=record.from_addr)
        return hangup()

    async def take_relay(self, interaction_id: str) -> str | None:
        """Whether a relay socket naming ``interaction_id`` may be accepted (None), or
        why not: the handshake carries no timestamp or nonce (Twilio signs the URL only,
        Telnyx's token is the URL's), so a captured one could open a second socket and
        speak for the callee. A call takes one socket, claimed in the store (one
        statement: of two handshakes on any replicas, one wins), and an ended call
        none."""
        record = await self.inbound.interaction(interaction_id) if interaction_id else None
        if record is None or record.kind != "call":
            return "the socket names no call of this service"
        if record.status != "pending":
            return "the call has ended"
        now = time.time()
        if not await self.inbound.state.claim_provider_state(
            RELAY_SOCKET_SCOPE, interaction_id, {"at": now}, now
        ):
            return "the call already has its relay socket (a replayed handshake?)"
        return None

    async def run_relay(self, interaction_id: str, receive: Receive, send: Send) -> None:
        """The relay session of a socket ``take_relay`` admitted. A socket that never
        opened the call's session (no ``setup`` in time, or another call's) gives the
        call back: the call's own socket may still come."""
        session = RelaySession(self, receive, send, interaction=interaction_id)
        try:
            await session.run()
        finally:
            if not session.sid:
                await self.inbound.state.delete_provider_state(RELAY_SOCKET_SCOPE, interaction_id)

    def relay_opened(self, sid: str) -> None:
        self._relays.setdefault(sid, asyncio.Event())

    def relay_stored(self, sid: str) -> None:
        """The session stored the call's final state (the agent ended the call, or the
        socket closed)."""
        settled = self._relays.pop(sid, None)
        if settled is not None:
            settled.set()

    async def relay_settled(self, sid: str, timeout: float = 5.0) -> None:
        """Returns once a relay session of ``sid`` open on this process has stored the
        call's state (at most ``timeout`` seconds). The carrier asks the action URL and
        reports the end right after the socket closes; read before the session's last
        save, the transcript would lack the last turns (the summary would say nobody
        spoke). A socket on another replica is not waited for."""
        settled = self._relays.get(sid)
        if settled is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(settled.wait(), timeout)

    async def relay_state(self, sid: str) -> dict[str, Any] | None:
        """The state of a call connected to the relay (None: no such call here)."""
        state = await self._load(sid) if sid else None
        return state if state is not None and state.get("relay") else None

    async def save_state(self, sid: str, state: dict[str, Any]) -> None:
        await self._save(sid, state)

    async def interaction(self, state: Mapping[str, Any]) -> InteractionRecord | None:
        return await self.inbound.interaction(str(state["interactionId"]))

    # -- the end of a call ------------------------------------------------------------------
    async def status(self, params: Mapping[str, str], query: Mapping[str, str]) -> None:
        """A status callback: a final status ends the interaction (the summary is written
        in the background); anything else, or an unknown call, changes nothing."""
        call_status = params.get("CallStatus", "")
        if call_status not in (*UNANSWERED, "completed"):
            return
        sid = params.get("CallSid", "")
        await self.relay_settled(sid)
        state = await self._state(sid, params, query, create=False)
        if state is None:
            return
        record = await self.inbound.interaction(str(state["interactionId"]))
        if record is None or record.status != "pending" or state.get("ending"):
            return
        state["ending"] = True
        await self._save(sid, state)
        self._spawn(self._finish(record, state, call_status))

    async def _finish(self, record: InteractionRecord, state: dict[str, Any], how: str) -> None:
        transcript = [(str(s), str(t)) for s, t in state.get("transcript", [])]
        spoken: list[tuple[Speaker, str]] = [
            ("agent" if s == "agent" else "human", t) for s, t in transcript if t
        ]
        heard = any(s == "callee" and t for s, t in transcript)
        inbound = state.get("direction") == "inbound"
        prompt = (
            None
            if inbound
            else str(record.request.get("prompt") or record.request.get("message") or "")
        )
        outcome: CallOutcome = "completed"
        if how in UNANSWERED:
            outcome = "no_answer"
            summary = f"The call was not answered ({UNANSWERED[how]}): human did not respond."
        elif state.get("voicemail"):
            outcome = "no_answer"
            summary = (
                "An answering machine picked up; the voicemail left was: "
                f"{state['voicemail']} (human did not respond)"
            )
        elif not heard and not inbound:
            outcome = "no_answer"
            summary = "The call connected but nobody spoke: human did not respond."
        else:
            if state.get("transferred"):
                outcome = "transferred"
            assert self.agent is not None
            summary = await self.agent.summarize(prompt, transcript, outcome)
            transfer_to = record.request.get("transferTo")
            if outcome == "transferred" and transfer_to and str(transfer_to) not in summary:
                summary += f" The call was transferred to {transfer_to}."
        current = await self.inbound.interaction(record.id)
        if current is not None and current.status == "pending":
            await self.inbound.end_call(
                current, outcome=outcome, summary=summary, transcript=spoken
            )
