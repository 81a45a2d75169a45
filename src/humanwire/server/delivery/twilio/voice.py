"""Calls through Twilio, run turn by turn by the voice agent.

``POST /calls`` and ``/phone/call`` create a Twilio call (answering-machine detection on,
status callbacks to ``/providers/twilio/call-status``) whose TwiML comes from
``/providers/twilio/voice``. Each turn's speech is added to the transcript kept in the
store (``provider_state``, keyed by ``CallSid``), so a turn may land on any process and
survive a restart. The call's interaction id travels in the URLs Twilio calls back, so
the first turn never depends on the create request's answer having been stored.

Outcomes (docs/providers.md): a person who spoke → ``completed`` (or ``transferred`` after a
``<Dial>``); no answer, busy, failed, canceled, an answering machine (the voicemail the
prompt describes is left) or a call where nobody said anything → ``no_answer``, "human did
not respond". The summary is the chat model's, written in the background once Twilio
reports the end, so the status callback is answered at once.

Inbound calls to a reserved number get the voicemail-style agent: it takes a message and
shares nothing; the summary reaches the webhooks as ``call.conversation.ended``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..base import Outbound, ProviderFailure, Sent
from .jobs import TwilioJobs
from .messaging import refusal
from .rest import TwilioAPIError, TwilioREST

if TYPE_CHECKING:
    from ...engine import Engine
    from ...store.base import InteractionRecord
    from ...voice import VoiceAgent

__all__ = ["CALL_SCOPE", "TwilioVoice"]

logger = logging.getLogger("humanwire.twilio")

CALL_SCOPE = "twilio-call"
_UNANSWERED = {
    "busy": "the line was busy",
    "no-answer": "nobody picked up",
    "failed": "the call could not be connected",
    "canceled": "the call was canceled before it was answered",
}
_MACHINE = ("machine_start", "machine_end_beep", "machine_end_silence", "machine_end_other")


class TwilioVoice:
    def __init__(
        self,
        rest: TwilioREST,
        engine: Engine,
        agent: VoiceAgent | None,
        *,
        voice_url: str,
        status_url: str,
        jobs: TwilioJobs,
    ) -> None:
        self.jobs = jobs
        self.rest = rest
        self.engine = engine
        self.agent = agent
        self.voice_url = voice_url
        self.status_url = status_url
        self._tasks: set[asyncio.Task[None]] = set()

    async def aclose(self) -> None:
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5.0)

    # -- placing a call ---------------------------------------------------------------
    async def place(self, item: Outbound) -> Sent:
        query = f"?interaction={item.interaction_id}"
        params: list[tuple[str, str]] = [
            ("To", item.to_addr),
            ("From", item.from_addr or ""),
            ("Url", self.voice_url + query),
            ("Method", "POST"),
            ("StatusCallback", self.status_url + query),
            ("StatusCallbackMethod", "POST"),
            ("StatusCallbackEvent", "completed"),
            ("MachineDetection", "Enable"),
        ]
        limit = self._time_limit(item)
        if limit is not None:
            params.append(("TimeLimit", str(limit)))
        try:
            created = await self.rest.create_call(params, account=item.account_id)
        except TwilioAPIError as exc:
            raise refusal(exc, "call") from None
        sid = str(created.get("sid") or "")
        if not sid:
            raise ProviderFailure("Twilio answered without a call sid")
        return Sent(ref=sid, status="queued")

    def _time_limit(self, item: Outbound) -> int | None:
        """``/phone/call`` is over after five minutes: Twilio hangs up a little after."""
        if item.interaction_id is None:
            return None
        record = self.engine.store.get_interaction(item.interaction_id)
        if record is None or not record.request.get("_phone"):
            return None
        return int(self.engine.config.phone_call_limit) + 30

    def hang_up(self, sid: str) -> None:
        """Ends a call still running (the skill's five minutes passed): a stored job,
        retried until Twilio takes it, so Twilio being slow holds nothing up."""
        self.jobs.add("hang_up", sid)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- state kept between turns -----------------------------------------------------
    def _load(self, sid: str) -> dict[str, Any] | None:
        return self.engine.store.get_provider_state(CALL_SCOPE, sid)

    def _save(self, sid: str, state: dict[str, Any]) -> None:
        self.engine.store.put_provider_state(CALL_SCOPE, sid, state, time.time())

    def _state(
        self, sid: str, params: Mapping[str, str], query: Mapping[str, str], *, create: bool
    ) -> dict[str, Any] | None:
        """The call's state; on its first turn, built from the interaction named in the
        URL (outbound) or opened for the reserved number called (inbound). None for a
        call this service does not know (answered harmlessly)."""
        state = self._load(sid) if sid else None
        if state is not None or not sid:
            return state
        interaction_id = query.get("interaction")
        if interaction_id:
            record = self.engine.store.get_interaction(interaction_id)
            if record is None or record.kind != "call":
                return None
            state = {"interactionId": record.id, "direction": "outbound"}
        elif create and params.get("Direction", "").startswith("inbound"):
            called = params.get("To", "")
            number = self.engine.store.number_by_phone(called)
            if number is None or self.agent is None:
                return None
            record = self.engine.open_inbound_call(
                number.account_id, from_addr=params.get("From", ""), to_addr=called
            )
            state = {"interactionId": record.id, "direction": "inbound"}
        else:
            return None
        state.update(transcript=[], started=False, transferred=False, voicemail=None)
        return state

    # -- a TwiML turn -------------------------------------------------------------------
    async def turn(self, params: Mapping[str, str], query: Mapping[str, str]) -> str:
        from ...voice import hangup, say_and_dial, say_and_hangup, say_and_listen, voicemail

        sid = params.get("CallSid", "")
        state = self._state(sid, params, query, create=True)
        if state is None:
            return say_and_hangup("Sorry, this number does not take calls. Goodbye.")
        record = self.engine.store.get_interaction(str(state["interactionId"]))
        if record is None or record.status != "pending" or self.agent is None:
            return hangup()
        request = record.request
        voice = str(request.get("voice") or "female")
        language = str(request.get("language") or "en-US")
        action = f"{self.voice_url}?interaction={record.id}"
        transcript: list[list[str]] = state["transcript"]
        if state["started"]:
            heard = "" if query.get("silence") else params.get("SpeechResult", "").strip()
            transcript.append(["callee", heard])
        inbound = state["direction"] == "inbound"
        prompt = str(request.get("prompt") or request.get("message") or "")
        transfer_to = str(request.get("transferTo") or "") or None
        if inbound:
            if not state["started"]:
                text = await self.agent.inbound_greeting()
                turn_action = "say"
            else:
                turn = await self.agent.inbound_next([tuple(t) for t in transcript])  # type: ignore[misc]
                text, turn_action = turn.text, turn.action
        elif not state["started"] and params.get("AnsweredBy", "") in (*_MACHINE, "fax"):
            message = await self.agent.voicemail(prompt)
            state.update(started=True, voicemail=message)
            transcript.append(["agent", message])
            self._save(sid, state)
            return voicemail(message, voice=voice, language=language)
        elif not state["started"]:
            turn = await self.agent.opening(prompt, transfer_available=transfer_to is not None)
            text, turn_action = turn.text, turn.action
        else:
            turn = await self.agent.next_turn(
                prompt,
                [tuple(t) for t in transcript],  # type: ignore[misc]
                transfer_available=transfer_to is not None,
            )
            text, turn_action = turn.text, turn.action
        state["started"] = True
        transcript.append(["agent", text])
        if turn_action == "transfer" and transfer_to is not None:
            state["transferred"] = True
            self._save(sid, state)
            return say_and_dial(
                text, transfer_to, caller_id=record.from_addr, voice=voice, language=language
            )
        self._save(sid, state)
        if turn_action == "say":
            return say_and_listen(text, action_url=action, voice=voice, language=language)
        return say_and_hangup(text, voice=voice, language=language)

    # -- the end of a call ------------------------------------------------------------------
    def status(self, params: Mapping[str, str], query: Mapping[str, str]) -> None:
        """A status callback: a final status ends the interaction (the summary is written
        in the background); anything else, or an unknown call, changes nothing."""
        call_status = params.get("CallStatus", "")
        if call_status not in (*_UNANSWERED, "completed"):
            return
        sid = params.get("CallSid", "")
        state = self._state(sid, params, query, create=False)
        if state is None:
            return
        record = self.engine.store.get_interaction(str(state["interactionId"]))
        if record is None or record.status != "pending" or state.get("ending"):
            return
        state["ending"] = True
        self._save(sid, state)
        self._spawn(self._finish(record, state, call_status))

    async def _finish(self, record: InteractionRecord, state: dict[str, Any], how: str) -> None:
        transcript = [(str(s), str(t)) for s, t in state.get("transcript", [])]
        spoken = [("agent" if s == "agent" else "human", t) for s, t in transcript if t]
        heard = any(s == "callee" and t for s, t in transcript)
        inbound = state.get("direction") == "inbound"
        prompt = (
            None
            if inbound
            else str(record.request.get("prompt") or record.request.get("message") or "")
        )
        outcome = "completed"
        if how in _UNANSWERED:
            outcome = "no_answer"
            summary = f"The call was not answered ({_UNANSWERED[how]}): human did not respond."
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
        current = self.engine.store.get_interaction(record.id)
        if current is not None and current.status == "pending":
            self.engine.end_call(current, outcome=outcome, summary=summary, transcript=spoken)  # type: ignore[arg-type]
