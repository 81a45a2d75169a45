"""``FakeTwilio``: Twilio's side, played locally. Its parts, moto-style: the records
(``records``), the state and the phone's side here (numbers, messages, calls, callbacks),
the REST API over HTTP (``responses.TwilioResponses``), the TwiML loop and
ConversationRelay (``twiml.TwimlPlayer``), served by ``server.TwilioFakeServer``.

Every REST request is checked against the published description (``spec``) and against
the rules Twilio states in prose (a message needs a body, media or a template; ``From``
must be one of the account's numbers; WhatsApp addresses on both ends or neither; a call
needs ``Url``, ``Twiml`` or ``ApplicationSid``…). Anything refused is answered with
Twilio's error body and recorded in ``violations``, so a test can assert the service
never sent Twilio a bad request. Refusals a test asked for (``refuse``, ``fail_next``)
are answered the same way but are not violations.

The phone's side: status callbacks after each message (``sent`` then ``delivered``, or an
injected failure), inbound messages, and calls run against the service's TwiML by a
scripted callee. Every callback is signed as Twilio signs (``X-Twilio-Signature``,
computed by the official ``twilio`` package) and sent to the exact URL the service gave.
Callbacks run on the serving loop with ``httpx.AsyncClient`` (10 s timeouts); the
test-facing methods are thread-safe and have async twins (``a…``).

Error codes used (Twilio's, https://www.twilio.com/docs/errors/<code>):

===========  ====================================================================
20001        a parameter the description does not know (Twilio itself only warns),
             a value of the wrong type / outside its enum or pattern, repeated
             scalar parameter, a body that is not form-encoded
20003        bad or missing credentials, another account's sid in the path (401)
20004        a method the path does not take (405)
20404        an unknown path or sid (404)
20429/20500  ``fail_next(429)`` / ``fail_next(5xx)``
21201/21213  a call without ``To`` / ``From``
21205        a call without ``Url``, ``Twiml`` or ``ApplicationSid``, or a bad ``Url``
21200        other refused call parameters (``Twiml`` not a ``<Response>``, ``Url`` and
             ``Twiml`` together on an update, ``MachineDetection`` / ``AsyncAmd``
             values the prose does not list)
21209        a bad ``Method`` / ``*Method``
21210        a call ``From`` a number the account does not own
21211/21212  a malformed ``To`` / ``From`` (not E.164, not a valid number)
21220        redirecting a call that is not in progress
21402        a bad URL on a phone number (``SmsUrl``, ``VoiceUrl``…)
21421/21422/21452  buying: neither ``PhoneNumber`` nor ``AreaCode`` / that number is not
             for sale / nothing for sale in that area code
21602/21603/21604  a message without body, media or template / without ``From`` or
             ``MessagingServiceSid`` / without ``To``
21606        a message ``From`` a number the account does not own (SMS)
63007        a WhatsApp message from a sender the account does not own
21609        a bad ``StatusCallback`` URL
21617/21623  a body over 1,600 characters / more than 10 ``MediaUrl``
21626        a ``StatusCallbackEvent`` other than initiated / ringing / answered /
             completed
21656        ``ContentVariables`` without ``ContentSid``, or not a JSON object
21910        ``To`` and ``From`` not both WhatsApp addresses (or both not)
===========  ====================================================================
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar
from urllib.parse import urlencode

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._fake_server import FakeBackground, apoll_until, poll_until
from ..callee import CalleeScript
from .records import (
    API_VERSION,
    CALLBACK_TIMEOUT,
    DELIVERY_FAILURES,
    EVENT_STATUS,
    WHATSAPP,
    Failure,
    FakeAvailable,
    FakeCall,
    FakeCallback,
    FakeMessage,
    FakeNumber,
    FakeRequest,
    Violation,
    is_e164,
    new_sid,
    rfc2822,
    segments,
)
from .responses import TwilioResponses
from .spec import TwilioSpec, load_spec
from .twiml import TwimlPlayer

__all__ = ["FakeTwilio"]

T = TypeVar("T")


# -- the fake -------------------------------------------------------------------------------------
class FakeTwilio:
    """One Twilio account, played locally. Serve it with ``TwilioFakeServer``.

    Safe to drive from the test's thread while the server runs the app on its own
    loop: state changes hold ``lock``; the methods that talk to the service run on the
    server's loop and wait for the result (``a…`` twins await it from any loop)."""

    def __init__(
        self,
        account_sid: str | None = None,
        auth_token: str | None = None,
        *,
        spec: TwilioSpec | None = None,
        auto_status: bool = True,
        status_delay: float = 0.01,
    ) -> None:
        self.account_sid = account_sid or "AC" + secrets.token_hex(16)
        if not re.fullmatch(r"AC[0-9a-fA-F]{32}", self.account_sid):
            raise ValueError("account_sid must be AC followed by 32 hex digits")
        self.auth_token = auth_token or secrets.token_hex(16)
        self.spec = spec or load_spec()
        self.auto_status = auto_status
        """Post ``sent`` / ``delivered`` (or the injected failure) after each message."""
        self.status_delay = status_delay
        self.lock = threading.RLock()
        self.background = FakeBackground(
            "fake Twilio",
            "TwilioFakeServer",
            self.lock,
            self._record_error,
            http_timeout=CALLBACK_TIMEOUT,
        )
        self.responses = TwilioResponses(self)
        self.player = TwimlPlayer(self)
        self.reset()

    def reset(self) -> None:
        """Forgets everything (numbers, records, injected failures, scripts); stops the
        calls and callbacks under way."""
        with self.lock:
            self.numbers: dict[str, FakeNumber] = {}
            """The account's numbers by sid (released ones stay, ``released`` True)."""
            self.available: dict[str, FakeAvailable] = {}
            self.messages: list[FakeMessage] = []
            self.calls: list[FakeCall] = []
            self.requests: list[FakeRequest] = []
            self.violations: list[Violation] = []
            self.callbacks: list[FakeCallback] = []
            self.errors: list[str] = []
            """Problems on the phone's side: callbacks that could not connect, TwiML
            that could not be run, exceptions in the fake's background work."""
            self.callees: dict[str, CalleeScript] = {}
            self.relay_setup = True
            """ConversationRelay: send ``setup`` once the socket is open (off: a carrier
            that never does, for the service's setup timeout)."""
            self._refused: dict[str, tuple[int, int]] = {}
            self._undeliverable: dict[str, tuple[str, int]] = {}
            self._failures: list[Failure] = []
            self._delay = 0.0
        self.background.cancel_all()

    # -- test controls ---------------------------------------------------------------------
    def add_number(
        self,
        phone_number: str,
        sms_url: str | None = None,
        voice_url: str | None = None,
        *,
        status_callback: str | None = None,
    ) -> str:
        """A number the operator already owns in this account; returns its ``PN`` sid."""
        if not is_e164(phone_number):
            raise ValueError(f"{phone_number!r} is not an E.164 phone number")
        with self.lock:
            if self.number(phone_number) is not None:
                raise ValueError(f"{phone_number} is already the account's")
            number = FakeNumber(
                new_sid("PN"),
                phone_number,
                sms_url=sms_url,
                voice_url=voice_url,
                status_callback=status_callback,
            )
            self.numbers[number.sid] = number
            return number.sid

    def add_available(
        self,
        phone_number: str,
        country: str = "US",
        area_code: str | int | None = None,
        *,
        locality: str | None = None,
        region: str | None = None,
    ) -> None:
        """A number Twilio would sell (``AvailablePhoneNumbers``, ``IncomingPhoneNumbers``
        create). The area code of a +1 number is its three digits after the +1."""
        if not is_e164(phone_number):
            raise ValueError(f"{phone_number!r} is not an E.164 phone number")
        if area_code is None and phone_number.startswith("+1"):
            area_code = phone_number[2:5]
        with self.lock:
            self.available[phone_number] = FakeAvailable(
                phone_number,
                country.upper(),
                None if area_code is None else str(area_code),
                locality,
                region,
            )

    def number(self, phone_number: str) -> FakeNumber | None:
        """The account's (unreleased) number ``phone_number``, ``whatsapp:`` or not."""
        phone = phone_number.removeprefix(WHATSAPP)
        with self.lock:
            for number in self.numbers.values():
                if number.phone_number == phone and not number.released:
                    return number
            return None

    def message(self, sid: str) -> FakeMessage:
        with self.lock:
            for message in self.messages:
                if message.sid == sid:
                    return message
        raise KeyError(sid)

    def call(self, sid: str) -> FakeCall:
        with self.lock:
            for call in self.calls:
                if call.sid == sid:
                    return call
        raise KeyError(sid)

    def sent_to(self, to: str) -> list[FakeMessage]:
        """The messages sent to ``to`` (SMS and WhatsApp alike), in order."""
        phone = to.removeprefix(WHATSAPP)
        with self.lock:
            return [m for m in self.messages if m.to.removeprefix(WHATSAPP) == phone]

    def calls_to(self, to: str) -> list[FakeCall]:
        with self.lock:
            return [c for c in self.calls if c.to == to]

    def callee(self, phone_number: str, script: CalleeScript) -> None:
        """How the person at ``phone_number`` takes the calls placed to it (default: a
        person who answers and hangs up at the first Gather)."""
        with self.lock:
            self.callees[phone_number] = script

    def refuse(self, to: str, code: int = 21211, status: int = 400) -> None:
        """Messages and calls to ``to`` are refused with Twilio error ``code`` (21211
        invalid number, 21614 not a mobile number, 21408 region not enabled, 21610
        unsubscribed…). Not recorded as violations."""
        with self.lock:
            self._refused[to.removeprefix(WHATSAPP)] = (code, status)

    def fail_next(
        self,
        status: int = 500,
        *,
        times: int = 1,
        retry_after: float | None = None,
        match: str | None = None,
    ) -> None:
        """The next ``times`` valid REST requests (whose path contains ``match``, when
        given) fail with ``status`` (429, 500, 503…), ``Retry-After`` when given."""
        code = 20429 if status == 429 else 20500 if status >= 500 else 20001
        with self.lock:
            self._failures.append(Failure(status, code, retry_after, times, match))

    def delay(self, seconds: float) -> None:
        """Every REST answer takes ``seconds`` longer (a slow Twilio); 0 ends it."""
        with self.lock:
            self._delay = seconds

    def fail_delivery(self, to: str, status: str = "undelivered", error_code: int = 30003) -> None:
        """Messages to ``to`` are accepted, then reported ``status`` (``undelivered`` or
        ``failed``) with ``ErrorCode`` ``error_code`` (30003 unreachable, 30005 unknown
        destination, 30006 landline, 30007 filtered…)."""
        if status not in DELIVERY_FAILURES:
            raise ValueError(f"status must be one of {DELIVERY_FAILURES}")
        with self.lock:
            self._undeliverable[to.removeprefix(WHATSAPP)] = (status, error_code)

    def hang_up(self, call_sid: str) -> None:
        """The callee hangs up (now, or as soon as the call's current step ends)."""
        call = self.call(call_sid)
        with self.lock:
            if not call.done:
                call.hang_up_requested = True
                call.ended_by = call.ended_by or "callee"

    # -- waiting, from the test's thread (or any loop) ------------------------------------
    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        """Polls ``predicate`` (under the fake's lock) until it is truthy; returns it."""
        return poll_until(predicate, self.lock, timeout, "fake Twilio")

    async def await_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        return await apoll_until(predicate, self.lock, timeout, "fake Twilio")

    def _idle(self) -> bool:
        with self.lock:
            return self.background.idle and all(c.done for c in self.calls)

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Until every callback, delivery report and call the fake started is over."""
        self.wait_for(self._idle, timeout)

    async def await_idle(self, timeout: float = 5.0) -> None:
        await self.await_for(self._idle, timeout)

    # -- the phone's side, from the test's thread (run on the fake's loop) -----------------
    def send_inbound(
        self,
        from_: str,
        to: str,
        body: str,
        *,
        media_urls: Sequence[str] = (),
        channel: Literal["sms", "whatsapp"] = "sms",
        message_sid: str | None = None,
        url: str | None = None,
        profile_name: str = "Test Human",
    ) -> httpx.Response:
        """A person at ``from_`` texts ``to``: posted, signed, to the ``SmsUrl`` of ``to``
        (with its ``SmsMethod``), or to ``url``. Reusing ``message_sid`` redelivers the
        same message. Returns the service's answer."""
        return self.background.run(
            self._inbound(from_, to, body, media_urls, channel, message_sid, url, profile_name)
        )

    async def asend_inbound(
        self,
        from_: str,
        to: str,
        body: str,
        *,
        media_urls: Sequence[str] = (),
        channel: Literal["sms", "whatsapp"] = "sms",
        message_sid: str | None = None,
        url: str | None = None,
        profile_name: str = "Test Human",
    ) -> httpx.Response:
        return await self.background.arun(
            self._inbound(from_, to, body, media_urls, channel, message_sid, url, profile_name)
        )

    def post_message_status(
        self, message_sid: str, status: str, error_code: int | None = None
    ) -> httpx.Response:
        """Posts one status callback of a sent message (by hand, e.g. ``read`` or a late
        ``failed``) to the ``StatusCallback`` it was sent with."""
        return self.background.run(self._message_status_by_sid(message_sid, status, error_code))

    async def apost_message_status(
        self, message_sid: str, status: str, error_code: int | None = None
    ) -> httpx.Response:
        return await self.background.arun(
            self._message_status_by_sid(message_sid, status, error_code)
        )

    def post_signed(
        self,
        url: str,
        params: Mapping[str, str],
        *,
        signature: str | None = None,
        method: str = "POST",
    ) -> httpx.Response:
        """Sends ``params`` to ``url`` signed as Twilio signs, or with ``signature`` as
        given (``"bad"``, a signature of other params…): security tests."""
        return self.background.run(self._send(url, dict(params), method, signature=signature))

    async def apost_signed(
        self,
        url: str,
        params: Mapping[str, str],
        *,
        signature: str | None = None,
        method: str = "POST",
    ) -> httpx.Response:
        return await self.background.arun(
            self._send(url, dict(params), method, signature=signature)
        )

    def inbound_call(
        self, from_: str, to: str, script: CalleeScript, *, timeout: float = 60.0
    ) -> FakeCall:
        """A person at ``from_`` calls ``to``: the call runs against the ``VoiceUrl`` of
        ``to`` (``Direction`` inbound) and is returned once it is over."""
        return self.background.run(self._inbound_call(from_, to, script), timeout=timeout)

    async def ainbound_call(self, from_: str, to: str, script: CalleeScript) -> FakeCall:
        return await self.background.arun(self._inbound_call(from_, to, script))

    # -- serving -----------------------------------------------------------------------------
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The serving loop (None while not served)."""
        return self.background.loop

    def app(self) -> Starlette:
        """The REST API as an ASGI app; its lifespan binds the fake to the serving loop."""

        async def handle(request: Request) -> Response:
            return await self.responses.handle(request)

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with self.background.serving():
                yield

        return Starlette(
            routes=[
                Route("/{path:path}", handle, methods=["GET", "POST", "DELETE", "PUT", "PATCH"])
            ],
            lifespan=lifespan,
        )

    def _record_error(self, problem: str) -> None:
        with self.lock:
            self.errors.append(problem)

    # -- the operations --------------------------------------------------------------------

    # -- messages --------------------------------------------------------------------------

    async def _report(
        self, message: FakeMessage, url: str | None, failing: tuple[str, int] | None
    ) -> None:
        await asyncio.sleep(self.status_delay)  # after the create's answer, as Twilio does
        final = failing if failing is not None else ("delivered", None)
        for status, error_code in (("sent", None), final):
            with self.lock:
                if message.deleted or message.status == "canceled":
                    return
            try:
                await self._message_status(message, url, status, error_code)
            except httpx.HTTPError as exc:
                self._record_error(f"status callback of {message.sid} to {url}: {exc!r}")

    async def _message_status_by_sid(
        self, sid: str, status: str, error_code: int | None
    ) -> httpx.Response:
        message = self.message(sid)
        url = str(message.params.get("StatusCallback") or "")
        if not url:
            raise RuntimeError(f"message {sid} was sent without a StatusCallback")
        response = await self._message_status(message, url, status, error_code)
        assert response is not None
        return response

    async def _message_status(
        self, message: FakeMessage, url: str | None, status: str, error_code: int | None
    ) -> httpx.Response | None:
        now = time.time()
        with self.lock:
            message.status = status
            message.updated = now
            if status == "sent" and message.sent is None:
                message.sent = now
            if error_code is not None:
                message.error_code = error_code
        if url is None:
            with self.lock:
                message.statuses.append(status)
            return None
        params = {
            "MessageSid": message.sid,
            "SmsSid": message.sid,
            "AccountSid": self.account_sid,
            "From": message.from_,
            "To": message.to,
            "MessageStatus": status,
            "SmsStatus": status,
            "ApiVersion": API_VERSION,
        }
        if message.params.get("MessagingServiceSid"):
            params["MessagingServiceSid"] = str(message.params["MessagingServiceSid"])
        if message.channel == "whatsapp":
            params["ChannelPrefix"] = "whatsapp"
        if error_code is not None:
            params["ErrorCode"] = str(error_code)
        try:
            return await self._send(url, params)
        finally:
            with self.lock:  # once the service has answered it (or could not be reached)
                message.statuses.append(status)

    async def _inbound(
        self,
        from_: str,
        to: str,
        body: str,
        media_urls: Sequence[str],
        channel: Literal["sms", "whatsapp"],
        message_sid: str | None,
        url: str | None,
        profile_name: str,
    ) -> httpx.Response:
        number = self.number(to)
        target = url or (number.sms_url if number else None)
        if not target:
            raise RuntimeError(f"{to} has no SmsUrl: configure it first, or pass url=")
        method = "POST" if url or number is None else number.sms_method
        prefix = WHATSAPP if channel == "whatsapp" else ""
        sender, receiver = from_.removeprefix(WHATSAPP), to.removeprefix(WHATSAPP)
        sid = message_sid or new_sid("SM" if not media_urls else "MM")
        params = {
            "MessageSid": sid,
            "SmsMessageSid": sid,
            "SmsSid": sid,
            "AccountSid": self.account_sid,
            "From": prefix + sender,
            "To": prefix + receiver,
            "Body": body,
            "NumMedia": str(len(media_urls)),
            "NumSegments": str(segments(body)),
            "SmsStatus": "received",
            "ApiVersion": API_VERSION,
        }
        for index, media in enumerate(media_urls):
            kind = mimetypes.guess_type(media.split("?", 1)[0])[0] or "image/jpeg"
            params[f"MediaUrl{index}"] = media
            params[f"MediaContentType{index}"] = kind
        if channel == "whatsapp":
            params["ProfileName"] = profile_name
            params["WaId"] = sender.lstrip("+")
            params["MessageType"] = "image" if media_urls else "text"
        return await self._send(target, params, method)

    async def _send(
        self,
        url: str,
        params: dict[str, str],
        method: str = "POST",
        *,
        signature: str | None = None,
    ) -> httpx.Response:
        """Calls the service as Twilio does: POST a form, or GET with the parameters in
        the query; signed over the exact URL (plus the POST parameters)."""
        from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]

        method = method.upper()
        if method == "GET":
            if params:
                url = f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"
            signed: dict[str, str] = {}
        else:
            signed = params
        if signature is None:
            signature = RequestValidator(self.auth_token).compute_signature(url, signed)
        headers = {
            "X-Twilio-Signature": signature,
            "User-Agent": "TwilioProxy/1.1",
            "I-Twilio-Idempotency-Token": secrets.token_hex(16),
        }
        http = self.background.http
        try:
            if method == "GET":
                response = await http.get(url, headers=headers)
            else:
                response = await http.post(url, data=params, headers=headers)
        except httpx.HTTPError:
            with self.lock:
                self.callbacks.append(FakeCallback(method, url, dict(params), 0))
            raise
        with self.lock:
            self.callbacks.append(FakeCallback(method, url, dict(params), response.status_code))
        return response

    # -- numbers ---------------------------------------------------------------------------

    # -- calls -----------------------------------------------------------------------------

    async def _inbound_call(self, from_: str, to: str, script: CalleeScript) -> FakeCall:
        number = self.number(to)
        if number is None or not number.voice_url:
            raise RuntimeError(f"{to} has no VoiceUrl: configure it first")
        params: dict[str, Any] = {
            "From": from_,
            "To": to,
            "Url": number.voice_url,
            "Method": number.voice_method,
        }
        if number.status_callback:
            params["StatusCallback"] = number.status_callback
            params["StatusCallbackMethod"] = number.status_callback_method
        call = FakeCall(new_sid("CA"), params, direction="inbound")
        with self.lock:
            self.calls.append(call)
        await self._run_call(call, script)
        return call

    def _call_params(self, call: FakeCall, status: str | None = None) -> dict[str, str]:
        params = {
            "CallSid": call.sid,
            "AccountSid": self.account_sid,
            "From": call.from_,
            "To": call.to,
            "Caller": call.from_,
            "Called": call.to,
            "CallStatus": status or call.status,
            "Direction": call.direction,
            "ApiVersion": API_VERSION,
        }
        if call.answered_by is not None and call.params.get("AsyncAmd") != "true":
            params["AnsweredBy"] = call.answered_by
        return params

    def _events(self, call: FakeCall) -> tuple[str, ...]:
        events = tuple(call.params.get("StatusCallbackEvent") or ())
        return events or ("completed",)

    def _set_status(self, call: FakeCall, status: str) -> None:
        with self.lock:
            call.status = status
            call.statuses.append(status)

    async def _callback(self, url: str, method: str, params: dict[str, str]) -> None:
        try:
            await self._send(url, params, method)
        except httpx.HTTPError as exc:
            self._record_error(f"callback to {url}: {exc!r}")

    async def _call_event(self, call: FakeCall, event: str) -> None:
        url = call.params.get("StatusCallback")
        if not url or event not in self._events(call):
            return
        params = self._call_params(call, EVENT_STATUS.get(event, call.status))
        params.update(self._progress_params(call))
        if event == "completed":
            params["CallDuration"] = str(call.duration)
        await self._callback(str(url), str(call.params.get("StatusCallbackMethod", "POST")), params)

    def _progress_params(self, call: FakeCall) -> dict[str, str]:
        """``SequenceNumber`` orders the progress callbacks of one call, from 0."""
        with self.lock:
            sequence = call.progress_sent
            call.progress_sent += 1
        return {
            "CallbackSource": "call-progress-events",
            "SequenceNumber": str(sequence),
            "Timestamp": rfc2822(),
        }

    async def _finish(self, call: FakeCall, status: str) -> None:
        with self.lock:
            if call.done:
                return
            call.done = True
            call.ended_at = time.time()
            call.status = status
            call.statuses.append(status)
        await self._call_event(call, "completed")

    async def _wait(self, call: FakeCall, seconds: float) -> None:
        """Sleeps ``seconds``, cut short when the call is hung up or redirected."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if call.hang_up_requested or call.redirect is not None or self._over_time(call):
                return
            await asyncio.sleep(min(0.02, max(deadline - time.monotonic(), 0)))

    @staticmethod
    def _over_time(call: FakeCall) -> bool:
        limit = call.params.get("TimeLimit")
        if limit is None or call.answered_at is None:
            return False
        return time.time() - call.answered_at >= int(limit)

    async def _run_call(self, call: FakeCall, script: CalleeScript) -> None:
        try:
            await asyncio.sleep(0.01)  # after the create's answer
            await self._call_event(call, "initiated")
            self._set_status(call, "ringing")
            await self._call_event(call, "ringing")
            await self._wait(call, script.ring_seconds)
            if call.hang_up_requested:  # canceled (API) or declined (callee) while ringing
                await self._finish(call, "canceled" if call.ended_by == "api" else "busy")
                return
            if script.answer in ("no-answer", "busy", "failed"):
                await self._finish(call, script.answer)
                return
            self._answer(call, script)
            await self._call_event(call, "answered")
            if call.params.get("AsyncAmd") == "true" and call.answered_by is not None:
                self.background.spawn(self._amd_callback(call), f"AMD callback of {call.sid}")
            await self.player.converse(call, script)
            if call.ended_by is None and self._over_time(call):
                call.ended_by = "time-limit"
            await self._finish(call, "completed")
        except asyncio.CancelledError:
            with self.lock:
                call.done = True
                call.status = "failed" if call.answered_at is None else "completed"
            raise

    def _answer(self, call: FakeCall, script: CalleeScript) -> None:
        detection = call.params.get("MachineDetection")
        with self.lock:
            call.answered_at = time.time()
            if detection in ("Enable", "DetectMessageEnd"):
                if script.answer == "machine":
                    end = detection == "DetectMessageEnd"
                    call.answered_by = "machine_end_beep" if end else "machine_start"
                else:
                    call.answered_by = "human"
        self._set_status(call, "in-progress")

    async def _amd_callback(self, call: FakeCall) -> None:
        url = call.params.get("AsyncAmdStatusCallback")
        if not url:
            return
        params = {
            "CallSid": call.sid,
            "AccountSid": self.account_sid,
            "AnsweredBy": str(call.answered_by),
            "MachineDetectionDuration": "1200",
        }
        method = str(call.params.get("AsyncAmdStatusCallbackMethod", "POST"))
        await self._callback(str(url), method, params)

    # -- the TwiML loop --------------------------------------------------------------------

    # -- ConversationRelay ------------------------------------------------------------------
