"""The fake Twilio's phone side of a call: the TwiML loop (fetch the service's document,
play each verb, follow ``<Redirect>``, ``<Gather>`` and ``<Dial>`` actions, take REST
redirects and hang-ups between verbs) and ConversationRelay's WebSocket, played by the
callee's script (``testing.callee``)."""

from __future__ import annotations

import collections
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urljoin

import httpx

from ..callee import BargeIn, CalleeScript
from .records import (
    CALLBACK_TIMEOUT,
    FakeCall,
    NextStep,
    new_sid,
)
from .spec import twiml_problem

if TYPE_CHECKING:
    from .fake import FakeTwilio

__all__ = ["TwimlPlayer"]


class TwimlPlayer:
    """Plays calls against the service's TwiML for ``fake`` (its state and callbacks)."""

    def __init__(self, fake: FakeTwilio) -> None:
        self.fake = fake

    async def converse(self, call: FakeCall, script: CalleeScript) -> None:
        says: collections.deque[str | BargeIn | None] = collections.deque(script.says)
        gathers = 0
        url = call.params.get("Url")
        if url:
            step: NextStep | None = NextStep(str(url), str(call.params.get("Method", "POST")))
        elif call.params.get("Twiml"):
            step = NextStep(None, document=str(call.params["Twiml"]))
        else:
            return  # ApplicationSid: the application's TwiML is not modelled
        first = True
        for _turn in range(200):
            if step is None or call.hang_up_requested:
                return
            document, base = step.document, step.url
            if document is None and base is not None:
                status = "ringing" if first and call.direction == "inbound" else None
                document = await self._fetch(call, base, step.method, step.extra, status)
                if document is None:
                    return
            first = False
            assert document is not None
            with self.fake.lock:
                call.twiml.append(document)
            problem = twiml_problem(document)
            if problem is not None:
                self.call_error(call, f"12100 Document parse failure: {problem}")
                return
            step = None
            for verb in ET.fromstring(document):
                interrupt = self._interrupted(call)
                if interrupt is not False:
                    step = interrupt
                    break
                outcome = await self._verb(call, script, verb, base, says, gathers)
                if outcome == "gathered":
                    gathers += 1
                    continue
                if outcome == "next":
                    continue
                if outcome == "end":
                    break
                if isinstance(outcome, tuple):
                    gathers += outcome[1]
                    step = outcome[0]
                    break
            else:
                interrupt = self._interrupted(call)
                if interrupt is not False:
                    step = interrupt
            if step is None and call.ended_by is None:
                call.ended_by = "service"

    def _interrupted(self, call: FakeCall) -> NextStep | Literal[False] | None:
        """A REST redirect (the next step), a hang-up (None), or nothing (False)."""
        with self.fake.lock:
            if call.hang_up_requested or self.fake._over_time(call):
                return None
            redirect, call.redirect = call.redirect, None
        if redirect is None:
            return False
        kind, target, method = redirect
        if kind == "twiml":
            return NextStep(None, document=target)
        return NextStep(target, method or "POST")

    def call_error(self, call: FakeCall, problem: str) -> None:
        with self.fake.lock:
            call.errors.append(problem)
        self.fake._record_error(f"call {call.sid}: {problem}")

    async def _fetch(
        self,
        call: FakeCall,
        url: str,
        method: str,
        extra: Mapping[str, str],
        status: str | None = None,
    ) -> str | None:
        """The TwiML at ``url`` (None: the service failed; the call ends, as Twilio's
        "an application error has occurred" does, after trying ``FallbackUrl``)."""
        params = {**self.fake._call_params(call, status), **extra}
        problem: str
        try:
            response = await self.fake._send(url, params, method)
        except httpx.HTTPError as exc:
            problem = f"11200 HTTP retrieval failure: {url}: {exc!r}"
        else:
            if response.is_success:
                return response.text
            problem = f"11200 HTTP retrieval failure: {url} answered {response.status_code}"
        self.call_error(call, problem)
        fallback = call.params.get("FallbackUrl")
        if fallback and url == call.params.get("Url"):
            params.update({"ErrorCode": "11200", "ErrorUrl": url})
            method = str(call.params.get("FallbackMethod", "POST"))
            try:
                response = await self.fake._send(str(fallback), params, method)
            except httpx.HTTPError as exc:
                self.call_error(call, f"11200 HTTP retrieval failure: {fallback}: {exc!r}")
                return None
            if response.is_success:
                return response.text
            self.call_error(
                call, f"11200 HTTP retrieval failure: {fallback} answered {response.status_code}"
            )
        return None

    async def _verb(
        self,
        call: FakeCall,
        script: CalleeScript,
        verb: ET.Element,
        base: str | None,
        says: collections.deque[str | BargeIn | None],
        gathers: int,
    ) -> Literal["next", "end", "gathered"] | tuple[NextStep, int]:
        """Plays one verb: ``next`` (go on), ``end`` (the call is over), ``gathered`` (a
        Gather timed out: go on), or the next document to request."""
        tag = verb.tag
        text = "".join(verb.itertext()).strip()
        if tag == "Say":
            with self.fake.lock:
                call.said.append(text)
            return "next"
        if tag == "Play":
            with self.fake.lock:
                call.played.append(text)
            return "next"
        if tag == "Pause":
            return "next"
        if tag in ("Hangup", "Reject"):
            return "end"
        if tag == "Redirect":
            if base is None and not text.startswith("http"):
                self.call_error(call, "a relative <Redirect> in inline TwiML")
                return "end"
            return (NextStep(urljoin(base or "", text), verb.get("method", "POST")), 0)
        if tag == "Dial":
            return self._dial(call, verb, base)
        if tag == "Gather":
            return await self._gather(call, script, verb, base, says, gathers)
        if tag == "Connect" and verb.find("ConversationRelay") is not None:
            return await self._relay(call, script, verb, base, says)
        self.call_error(call, f"<{tag}> is not played by the fake")
        return "next"

    def _dial(
        self, call: FakeCall, verb: ET.Element, base: str | None
    ) -> Literal["next"] | tuple[NextStep, int]:
        target = (verb.text or "").strip()
        for noun in verb:
            if noun.tag in ("Number", "Client", "Sip") and noun.text:
                target = noun.text.strip()
        with self.fake.lock:
            call.transferred_to = target
        action = verb.get("action")
        if not action:
            return "next"  # the bridged call ended: TwiML goes on after the Dial
        extra = {
            "DialCallStatus": "completed",
            "DialCallSid": new_sid("CA"),
            "DialCallDuration": "1",
        }
        return (NextStep(urljoin(base or "", action), verb.get("method", "POST"), extra), 0)

    async def _gather(
        self,
        call: FakeCall,
        script: CalleeScript,
        verb: ET.Element,
        base: str | None,
        says: collections.deque[str | BargeIn | None],
        gathers: int,
    ) -> Literal["next", "end", "gathered"] | tuple[NextStep, int]:
        for inner in verb:
            if inner.tag in ("Say", "Play", "Pause"):
                await self._verb(call, script, inner, base, says, gathers)
        inputs = verb.get("input", "dtmf").split()
        action = urljoin(base or "", verb.get("action") or "") or base
        method = verb.get("method", "POST")
        on_empty = verb.get("actionOnEmptyResult", "false") == "true"
        if script.answer == "machine":
            speech: str | None = None  # a machine says nothing back
        else:
            if not says or (script.hang_up_after is not None and gathers >= script.hang_up_after):
                with self.fake.lock:
                    call.hang_up_requested = True
                    call.ended_by = call.ended_by or "callee"
                return "end"
            said = says.popleft()
            speech = said.text if isinstance(said, BargeIn) else said
            await self.fake._wait(call, script.seconds_per_turn)
            if call.hang_up_requested or call.redirect is not None:
                return "next"  # the interruption is taken before the next verb
            with self.fake.lock:
                call.heard.append(speech)
        if speech is not None and "speech" in inputs:
            extra = {"SpeechResult": speech, "Confidence": f"{script.confidence:.2f}"}
        elif speech is not None and "dtmf" in inputs and re.fullmatch(r"[0-9#*]+", speech):
            extra = {"Digits": speech}
        else:  # no input: Twilio goes on after the Gather (or asks action, if told to)
            if on_empty and action:
                return (NextStep(action, method), 1)
            return "gathered" if script.answer != "machine" else "next"
        if action is None:
            self.call_error(call, "a <Gather> without action in inline TwiML")
            return "end"
        return (NextStep(action, method, extra), 1)

    async def _relay(
        self,
        call: FakeCall,
        script: CalleeScript,
        verb: ET.Element,
        base: str | None,
        says: collections.deque[str | BargeIn | None],
    ) -> Literal["next", "end"] | tuple[NextStep, int]:
        """``<Connect><ConversationRelay url=...>``: opens the WebSocket signed as Twilio
        signs it (the ``wss://`` URL, no parameters), says the ``welcomeGreeting``, sends
        ``setup`` (unless ``relay_setup`` is off), then plays the callee
        (``testing._relay``). The agent's ``end`` ends the session and the
        ``<Connect>``'s action is asked what follows (``SessionStatus``,
        ``HandoffData``); the service closing the socket alike (``SessionStatus=failed``)."""
        from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]
        from websockets.exceptions import InvalidStatus, WebSocketException

        from .._relay import relay_session

        relay = verb.find("ConversationRelay")
        assert relay is not None
        url = relay.get("url", "")
        signature = RequestValidator(self.fake.auth_token).compute_signature(url, {})
        started = time.monotonic()
        greeting = relay.get("welcomeGreeting")
        if greeting:
            with self.fake.lock:
                call.said.append(greeting)
        status, handoff = "failed", ""
        try:
            status, handoff = await relay_session(
                url,
                headers={"X-Twilio-Signature": signature},
                setup=self._setup(call) if self.fake.relay_setup else None,
                call=call,
                script=script,
                says=says,
                lock=self.fake.lock,
                wait=lambda seconds: self.fake._wait(call, seconds),
                hang_up_now=lambda: (
                    call.hang_up_requested
                    or self.fake._over_time(call)
                    or call.redirect is not None
                ),
                greeted=bool(greeting),
                open_timeout=CALLBACK_TIMEOUT,
            )
        except InvalidStatus as exc:
            self.call_error(
                call, f"ConversationRelay: {url} refused the WebSocket ({exc.response.status_code})"
            )
            return "end"
        except (OSError, WebSocketException, TimeoutError) as exc:
            self.call_error(call, f"ConversationRelay: {url}: {exc!r}")
        if status == "hung-up":
            return "end"
        action = verb.get("action")
        if not action:
            return "next"
        extra = {
            "SessionId": new_sid("VX"),
            "SessionStatus": status,
            "SessionDuration": str(int(time.monotonic() - started)),
        }
        if handoff:
            extra["HandoffData"] = handoff
        return (NextStep(urljoin(base or "", action), verb.get("method", "POST"), extra), 0)

    def _setup(self, call: FakeCall) -> dict[str, Any]:
        return {
            "type": "setup",
            "sessionId": new_sid("VX"),
            "accountSid": self.fake.account_sid,
            "parentCallSid": "",
            "callSid": call.sid,
            "from": call.from_,
            "to": call.to,
            "forwardedFrom": "",
            "callType": "PSTN",
            "callerName": "",
            "direction": "inbound" if call.direction == "inbound" else "outbound-api",
            "callStatus": "IN-PROGRESS",
            "customParameters": {},
        }
