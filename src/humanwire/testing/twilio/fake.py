"""``FakeTwilio``: Twilio's side, played locally (state and rules; ``server`` serves it).

Every REST request is checked against the published description (``spec``) and against
the rules Twilio states in prose (a message needs a body, media or a template; ``From``
must be one of the account's numbers; WhatsApp addresses on both ends or neither);
anything refused is answered with Twilio's error body and recorded in ``violations``, so
a test can assert the service never sent Twilio a bad request.

The phone's side: status callbacks after each message (``sent`` then ``delivered``, or an
injected failure), inbound messages, and calls run against the service's TwiML with a
scripted callee. Every callback is signed as Twilio signs (``X-Twilio-Signature``, the
official ``twilio`` package computes it) and posted to the exact URL the service gave.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import secrets
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl

import httpx
import phonenumbers
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .spec import Operation, SpecViolation, TwilioSpec, load_spec

__all__ = ["CalleeScript", "FakeCall", "FakeMessage", "FakeNumber", "FakeTwilio", "Violation"]

API_PREFIX = "/2010-04-01/Accounts/"
WHATSAPP = "whatsapp:"
Answer = Literal["human", "machine", "no-answer", "busy", "failed"]


def _sid(prefix: str) -> str:
    return prefix + secrets.token_hex(16)


def _rfc2822(unix: float | None = None) -> str:
    return email.utils.formatdate(unix if unix is not None else time.time(), usegmt=True).replace(
        "GMT", "+0000"
    )


@dataclass
class CalleeScript:
    """How the person at a number takes a call.

    ``answer``: ``human`` (speaks ``says`` in order), ``machine`` (an answering machine:
    ``AnsweredBy`` is a machine, nothing is said back), ``no-answer``, ``busy``,
    ``failed``. ``says``: one entry per ``<Gather>``: a sentence, or None for silence
    (the Gather times out). When the script runs out, or after ``hang_up_after``
    Gathers, the callee hangs up."""

    answer: Answer = "human"
    says: Sequence[str | None] = ()
    hang_up_after: int | None = None
    seconds_per_turn: float = 0.0
    """How long each answer takes (speaking, or the Gather's silence timeout)."""


@dataclass
class FakeNumber:
    sid: str
    phone_number: str
    sms_url: str | None = None
    voice_url: str | None = None
    status_callback: str | None = None
    bought: bool = False
    released: bool = False

    def resource(self, account_sid: str) -> dict[str, Any]:
        now = _rfc2822()
        return {
            "sid": self.sid,
            "account_sid": account_sid,
            "phone_number": self.phone_number,
            "friendly_name": self.phone_number,
            "sms_url": self.sms_url or "",
            "sms_method": "POST",
            "voice_url": self.voice_url or "",
            "voice_method": "POST",
            "status_callback": self.status_callback or "",
            "status_callback_method": "POST",
            "api_version": "2010-04-01",
            "date_created": now,
            "date_updated": now,
            "uri": f"/2010-04-01/Accounts/{account_sid}/IncomingPhoneNumbers/{self.sid}.json",
        }


@dataclass
class FakeMessage:
    sid: str
    params: dict[str, Any]
    status: str = "queued"
    statuses: list[str] = field(default_factory=list)
    """Every status posted back to the service (and answered), in order."""

    @property
    def to(self) -> str:
        return str(self.params.get("To", ""))

    @property
    def from_(self) -> str:
        return str(self.params.get("From", ""))

    @property
    def body(self) -> str | None:
        body = self.params.get("Body")
        return None if body is None else str(body)


@dataclass
class FakeCall:
    sid: str
    params: dict[str, Any]
    direction: str = "outbound-api"
    status: str = "queued"
    answered_by: str | None = None
    said: list[str] = field(default_factory=list)
    """What the service's voice said, every ``<Say>`` in order."""
    heard: list[str | None] = field(default_factory=list)
    """What the callee said back (None: silence)."""
    transferred_to: str | None = None
    twiml: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    hang_up_requested: bool = False
    done: bool = False


@dataclass
class Violation:
    method: str
    path: str
    params: list[tuple[str, str]]
    code: int
    message: str


@dataclass
class _Failure:
    status: int
    code: int
    message: str
    retry_after: float | None
    times: int


class FakeTwilio:
    """One Twilio account. Safe to drive from the test's thread while ``server`` runs
    the app on its own loop: state changes hold ``lock``."""

    def __init__(
        self,
        account_sid: str | None = None,
        auth_token: str | None = None,
        *,
        spec: TwilioSpec | None = None,
        auto_status: bool = True,
    ) -> None:
        self.account_sid = account_sid or "AC" + secrets.token_hex(16)
        self.auth_token = auth_token or secrets.token_hex(16)
        self.spec = spec or load_spec()
        self.auto_status = auto_status
        self.lock = threading.RLock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._http: httpx.AsyncClient | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.numbers: dict[str, FakeNumber] = {}
            self.available: dict[str, tuple[str, str]] = {}
            self.messages: list[FakeMessage] = []
            self.calls: list[FakeCall] = []
            self.requests: list[tuple[str, str, list[tuple[str, str]]]] = []
            self.violations: list[Violation] = []
            self.callbacks: list[tuple[str, dict[str, str], int]] = []
            self.callees: dict[str, CalleeScript] = {}
            self._refused: dict[str, tuple[int, int]] = {}
            self._undeliverable: dict[str, tuple[str, int]] = {}
            self._failures: list[_Failure] = []
            self._delay = 0.0

    # -- test controls -------------------------------------------------------------------
    def add_number(
        self, phone_number: str, *, sms_url: str | None = None, voice_url: str | None = None
    ) -> str:
        """A number the operator already owns in this account; returns its ``PN`` sid."""
        with self.lock:
            number = FakeNumber(_sid("PN"), phone_number, sms_url=sms_url, voice_url=voice_url)
            self.numbers[number.sid] = number
            return number.sid

    def add_available(self, phone_number: str, country: str = "US") -> None:
        """A number Twilio would sell (``AvailablePhoneNumbers``)."""
        with self.lock:
            self.available[phone_number] = (country, phone_number)

    def number(self, phone_number: str) -> FakeNumber | None:
        with self.lock:
            for number in self.numbers.values():
                if number.phone_number == phone_number and not number.released:
                    return number
            return None

    def callee(self, phone_number: str, script: CalleeScript) -> None:
        with self.lock:
            self.callees[phone_number] = script

    def refuse(self, to: str, code: int = 21211, status: int = 400) -> None:
        """Sends and calls to ``to`` are refused with Twilio error ``code``."""
        with self.lock:
            self._refused[to] = (code, status)

    def fail_next(
        self, status: int = 500, *, times: int = 1, retry_after: float | None = None
    ) -> None:
        """The next ``times`` REST requests fail with ``status`` (429, 500, 503…)."""
        with self.lock:
            code = 20429 if status == 429 else 20500 if status >= 500 else 20001
            self._failures.append(_Failure(status, code, "injected failure", retry_after, times))

    def delay(self, seconds: float) -> None:
        """Every REST answer takes ``seconds`` longer (a slow Twilio)."""
        with self.lock:
            self._delay = seconds

    def fail_delivery(self, to: str, status: str = "undelivered", error_code: int = 30003) -> None:
        """Messages to ``to`` are accepted, then reported ``status`` with ``error_code``."""
        with self.lock:
            self._undeliverable[to] = (status, error_code)

    def sent_to(self, to: str) -> list[FakeMessage]:
        with self.lock:
            return [m for m in self.messages if m.to.removeprefix(WHATSAPP) == to]

    # -- waiting, from the test's thread --------------------------------------------------
    def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError("the fake Twilio did not reach the expected state")
            time.sleep(0.01)

    async def await_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError("the fake Twilio did not reach the expected state")
            await asyncio.sleep(0.01)

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Until every callback and call the fake started has finished."""
        self.wait_for(lambda: not self._tasks, timeout)

    # -- the phone's side, from the test's thread (run on the fake's loop) ---------------
    def _run(self, coro: Any, timeout: float = 30.0) -> Any:  # Any: each caller's type
        if self.loop is None:
            raise RuntimeError("the fake Twilio is not being served (TwilioFakeServer)")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _arun(self, coro: Any) -> Any:
        if self.loop is None:
            raise RuntimeError("the fake Twilio is not being served (TwilioFakeServer)")
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

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
    ) -> httpx.Response:
        """A person texts ``to``: posted, signed, to the ``SmsUrl`` of ``to`` (or
        ``url``). Reusing ``message_sid`` redelivers the same message."""
        response: httpx.Response = self._run(
            self._inbound(from_, to, body, media_urls, channel, message_sid, url)
        )
        return response

    async def asend_inbound(self, from_: str, to: str, body: str, **options: Any) -> httpx.Response:
        response: httpx.Response = await self._arun(
            self._inbound(
                from_,
                to,
                body,
                options.get("media_urls", ()),
                options.get("channel", "sms"),
                options.get("message_sid"),
                options.get("url"),
            )
        )
        return response

    def post_message_status(
        self, message_sid: str, status: str, error_code: int | None = None
    ) -> httpx.Response:
        response: httpx.Response = self._run(
            self._message_status_by_sid(message_sid, status, error_code)
        )
        return response

    def post_signed(
        self, url: str, params: Mapping[str, str], *, signature: str | None = None
    ) -> httpx.Response:
        """Posts ``params`` to ``url`` signed (or with the ``signature`` given)."""
        response: httpx.Response = self._run(self._post(url, dict(params), signature=signature))
        return response

    def inbound_call(self, from_: str, to: str, script: CalleeScript) -> FakeCall:
        """A person calls ``to``: the call runs against the ``VoiceUrl`` of ``to``."""
        call: FakeCall = self._run(self._inbound_call(from_, to, script), timeout=60)
        return call

    async def ainbound_call(self, from_: str, to: str, script: CalleeScript) -> FakeCall:
        call: FakeCall = await self._arun(self._inbound_call(from_, to, script))
        return call

    def hang_up(self, call_sid: str) -> None:
        with self.lock:
            for call in self.calls:
                if call.sid == call_sid:
                    call.hang_up_requested = True

    # -- serving ---------------------------------------------------------------------------
    def app(self) -> Starlette:
        async def handle(request: Request) -> Response:
            return await self._handle(request)

        async def lifespan(app: Starlette) -> Any:
            self.loop = asyncio.get_running_loop()
            self._http = httpx.AsyncClient(timeout=10.0)
            try:
                yield
            finally:
                for task in list(self._tasks):
                    task.cancel()
                await self._http.aclose()
                self._http = None
                self.loop = None

        return Starlette(
            routes=[Route("/{path:path}", handle, methods=["GET", "POST", "DELETE", "PUT"])],
            lifespan=contextlib.asynccontextmanager(lifespan),
        )

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    def _error(
        status: int, code: int, message: str, headers: dict[str, str] | None = None
    ) -> Response:
        return JSONResponse(
            {
                "code": code,
                "message": message,
                "more_info": f"https://www.twilio.com/docs/errors/{code}",
                "status": status,
            },
            status,
            headers=headers,
        )

    def _authorized(self, request: Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return secrets.compare_digest(user, self.account_sid) and secrets.compare_digest(
            password, self.auth_token
        )

    async def _handle(self, request: Request) -> Response:
        path = request.url.path
        raw = await request.body()
        body_items = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
        query_items = list(request.query_params.multi_items())
        items = body_items if request.method == "POST" else query_items
        with self.lock:
            self.requests.append((request.method, path, items))
            delay = self._delay
            failure = self._failures[0] if self._failures else None
            if failure is not None:
                failure.times -= 1
                if failure.times <= 0:
                    self._failures.pop(0)
        if delay:
            await asyncio.sleep(delay)
        if not self._authorized(request):
            return self._error(401, 20003, "Authentication Error - invalid username")
        try:
            operation = self.spec.operation(request.method, path)
            if operation.path_params.get("AccountSid") != self.account_sid:
                raise SpecViolation(
                    "the account sid does not match the credentials", code=20003, status=401
                )
            if request.method == "POST":
                values = self.spec.check_body(operation, body_items)
            else:
                values = self.spec.check_query(operation, query_items)
        except SpecViolation as exc:
            with self.lock:
                self.violations.append(
                    Violation(request.method, path, items, exc.code, exc.message)
                )
            return self._error(exc.status, exc.code, exc.message)
        if failure is not None:
            headers = (
                {"Retry-After": str(int(failure.retry_after))} if failure.retry_after else None
            )
            return self._error(failure.status, failure.code, failure.message, headers)
        try:
            status, body = self._operate(operation, values)
        except SpecViolation as exc:
            if exc.code not in self._refusal_codes():
                with self.lock:
                    self.violations.append(
                        Violation(request.method, path, items, exc.code, exc.message)
                    )
            return self._error(exc.status, exc.code, exc.message)
        if status == 204:
            return Response(status_code=204)
        return JSONResponse(body, status)

    def _refusal_codes(self) -> set[int]:
        with self.lock:
            return {code for code, _status in self._refused.values()}

    # -- the operations ------------------------------------------------------------------------
    def _operate(self, operation: Operation, values: dict[str, Any]) -> tuple[int, Any]:
        key = operation.key
        sid = operation.path_params.get("Sid", "")
        if key == "POST /Messages.json":
            return 201, self._create_message(values)
        if key == "GET /Messages/{Sid}.json":
            return 200, self._message_resource(self._message(sid))
        if key == "POST /Calls.json":
            return 201, self._create_call(values)
        if key == "GET /Calls/{Sid}.json":
            return 200, self._call_resource(self._call(sid))
        if key == "POST /Calls/{Sid}.json":
            return 200, self._update_call(self._call(sid), values)
        if key == "GET /IncomingPhoneNumbers.json":
            wanted = values.get("PhoneNumber")
            with self.lock:
                found = [
                    n.resource(self.account_sid)
                    for n in self.numbers.values()
                    if not n.released and (wanted is None or n.phone_number == wanted)
                ]
            return 200, self._page("incoming_phone_numbers", found, "IncomingPhoneNumbers.json")
        if key == "POST /IncomingPhoneNumbers.json":
            return 201, self._buy(values)
        if key == "GET /IncomingPhoneNumbers/{Sid}.json":
            return 200, self._number(sid).resource(self.account_sid)
        if key == "POST /IncomingPhoneNumbers/{Sid}.json":
            number = self._number(sid)
            with self.lock:
                if "SmsUrl" in values:
                    number.sms_url = values["SmsUrl"] or None
                if "VoiceUrl" in values:
                    number.voice_url = values["VoiceUrl"] or None
                if "StatusCallback" in values:
                    number.status_callback = values["StatusCallback"] or None
            return 200, number.resource(self.account_sid)
        if key == "DELETE /IncomingPhoneNumbers/{Sid}.json":
            number = self._number(sid)
            with self.lock:
                number.released = True
            return 204, None
        if key == "GET /AvailablePhoneNumbers/{CountryCode}/Local.json":
            country = operation.path_params["CountryCode"]
            area = values.get("AreaCode")
            with self.lock:
                offers = [
                    {
                        "phone_number": phone,
                        "friendly_name": phone,
                        "iso_country": offer_country,
                        "capabilities": {"voice": True, "SMS": True, "MMS": True},
                    }
                    for phone, (offer_country, _) in self.available.items()
                    if offer_country == country and (area is None or phone.startswith(f"+1{area}"))
                ]
            return 200, {"available_phone_numbers": offers, "uri": ""}
        raise SpecViolation(f"the fake does not implement {key}", code=20004, status=405)

    def _buy(self, values: dict[str, Any]) -> dict[str, Any]:
        phone = values.get("PhoneNumber")
        area = values.get("AreaCode")
        with self.lock:
            if phone is None and area is not None:
                phone = next((p for p in self.available if p.startswith(f"+1{area}")), None)
            if phone is None or phone not in self.available:
                raise SpecViolation(
                    f"{phone or 'a number'} is not available to buy", code=21422, status=400
                )
            del self.available[phone]
            number = FakeNumber(
                _sid("PN"),
                str(phone),
                sms_url=values.get("SmsUrl"),
                voice_url=values.get("VoiceUrl"),
                status_callback=values.get("StatusCallback"),
                bought=True,
            )
            self.numbers[number.sid] = number
        return number.resource(self.account_sid)

    def _page(self, key: str, items: list[Any], uri: str) -> dict[str, Any]:
        return {
            key: items,
            "end": max(len(items) - 1, 0),
            "first_page_uri": f"/2010-04-01/Accounts/{self.account_sid}/{uri}?Page=0",
            "next_page_uri": None,
            "page": 0,
            "page_size": 50,
            "previous_page_uri": None,
            "start": 0,
            "uri": f"/2010-04-01/Accounts/{self.account_sid}/{uri}",
        }

    def _message(self, sid: str) -> FakeMessage:
        with self.lock:
            for message in self.messages:
                if message.sid == sid:
                    return message
        raise SpecViolation(f"no message {sid}", code=20404, status=404)

    def _call(self, sid: str) -> FakeCall:
        with self.lock:
            for call in self.calls:
                if call.sid == sid:
                    return call
        raise SpecViolation(f"no call {sid}", code=20404, status=404)

    def _number(self, sid: str) -> FakeNumber:
        with self.lock:
            number = self.numbers.get(sid)
        if number is None or number.released:
            raise SpecViolation(f"no incoming phone number {sid}", code=20404, status=404)
        return number

    def _owned(self, address: str) -> bool:
        phone = address.removeprefix(WHATSAPP)
        return self.number(phone) is not None

    @staticmethod
    def _valid(phone: str) -> bool:
        try:
            return bool(phonenumbers.is_valid_number(phonenumbers.parse(phone, None)))
        except phonenumbers.NumberParseException:
            return False

    def _check_to(self, to: str) -> None:
        phone = to.removeprefix(WHATSAPP)
        with self.lock:
            refused = self._refused.get(phone)
        if refused is not None:
            code, status = refused
            raise SpecViolation(f"Twilio refuses sending to {phone}", code=code, status=status)
        if not phone.startswith("+") or not self._valid(phone):
            raise SpecViolation(f"The 'To' number {to} is not a valid phone number.", code=21211)

    def _create_message(self, values: dict[str, Any]) -> dict[str, Any]:
        to, sender = str(values["To"]), str(values.get("From", ""))
        if not sender and not values.get("MessagingServiceSid"):
            raise SpecViolation("A 'From' phone number is required.", code=21603)
        if not (values.get("Body") or values.get("MediaUrl") or values.get("ContentSid")):
            raise SpecViolation("A text message body or media urls must be specified.", code=21602)
        if to.startswith(WHATSAPP) != sender.startswith(WHATSAPP):
            raise SpecViolation(
                "'To' and 'From' must both be WhatsApp addresses, or neither.", code=21910
            )
        if values.get("ContentVariables") and not values.get("ContentSid"):
            raise SpecViolation("ContentVariables needs a ContentSid.", code=21656)
        self._check_to(to)
        if not self._owned(sender):
            raise SpecViolation(
                f"The From phone number {sender} is not a valid, SMS-capable inbound phone "
                "number or short code for your account.",
                code=21606,
            )
        message = FakeMessage(_sid("SM"), dict(values))
        with self.lock:
            self.messages.append(message)
        callback = values.get("StatusCallback")
        if callback and self.auto_status:
            with self.lock:
                failing = self._undeliverable.get(to.removeprefix(WHATSAPP))
            self._spawn(self._report(message, str(callback), failing))
        return self._message_resource(message)

    def _message_resource(self, message: FakeMessage) -> dict[str, Any]:
        now = _rfc2822()
        values = message.params
        return {
            "sid": message.sid,
            "account_sid": self.account_sid,
            "api_version": "2010-04-01",
            "body": values.get("Body", ""),
            "date_created": now,
            "date_sent": None,
            "date_updated": now,
            "direction": "outbound-api",
            "error_code": None,
            "error_message": None,
            "from": values.get("From"),
            "messaging_service_sid": None,
            "num_media": str(len(values.get("MediaUrl", []) or [])),
            "num_segments": "1",
            "price": None,
            "price_unit": "USD",
            "status": message.status,
            "subresource_uris": {"media": f"{self._message_uri(message)}/Media.json"},
            "to": values.get("To"),
            "uri": f"{self._message_uri(message)}.json",
        }

    def _message_uri(self, message: FakeMessage) -> str:
        return f"/2010-04-01/Accounts/{self.account_sid}/Messages/{message.sid}"

    async def _report(
        self, message: FakeMessage, url: str, failing: tuple[str, int] | None
    ) -> None:
        await asyncio.sleep(0.01)  # after the create's answer, as Twilio does
        steps: list[tuple[str, int | None]] = [("sent", None)]
        steps.append((failing[0], failing[1]) if failing else ("delivered", None))
        for status, error_code in steps:
            await self._message_status(message, url, status, error_code)

    async def _message_status_by_sid(
        self, sid: str, status: str, error_code: int | None
    ) -> httpx.Response:
        message = self._message(sid)
        url = str(message.params.get("StatusCallback") or "")
        if not url:
            raise RuntimeError(f"message {sid} asked for no status callback")
        return await self._message_status(message, url, status, error_code)

    async def _message_status(
        self, message: FakeMessage, url: str, status: str, error_code: int | None
    ) -> httpx.Response:
        with self.lock:
            message.status = status
        params = {
            "MessageSid": message.sid,
            "SmsSid": message.sid,
            "AccountSid": self.account_sid,
            "From": message.from_,
            "To": message.to,
            "MessageStatus": status,
            "SmsStatus": status,
            "ApiVersion": "2010-04-01",
        }
        if error_code is not None:
            params["ErrorCode"] = str(error_code)
        response = await self._post(url, params)
        with self.lock:  # once the service has answered it
            message.statuses.append(status)
        return response

    async def _inbound(
        self,
        from_: str,
        to: str,
        body: str,
        media_urls: Sequence[str],
        channel: Literal["sms", "whatsapp"],
        message_sid: str | None,
        url: str | None,
    ) -> httpx.Response:
        number = self.number(to)
        target = url or (number.sms_url if number else None)
        if not target:
            raise RuntimeError(f"{to} has no SmsUrl: reserve it first, or pass url=")
        prefix = WHATSAPP if channel == "whatsapp" else ""
        sid = message_sid or _sid("SM")
        params = {
            "MessageSid": sid,
            "SmsMessageSid": sid,
            "SmsSid": sid,
            "AccountSid": self.account_sid,
            "MessagingServiceSid": "",
            "From": prefix + from_,
            "To": prefix + to,
            "Body": body,
            "NumMedia": str(len(media_urls)),
            "NumSegments": "1",
            "SmsStatus": "received",
            "ApiVersion": "2010-04-01",
        }
        for index, media in enumerate(media_urls):
            params[f"MediaUrl{index}"] = media
            params[f"MediaContentType{index}"] = "image/jpeg"
        if channel == "whatsapp":
            params["ProfileName"] = "Test Human"
            params["WaId"] = from_.lstrip("+")
        return await self._post(target, params)

    async def _post(
        self, url: str, params: dict[str, str], *, signature: str | None = None
    ) -> httpx.Response:
        from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]

        if signature is None:
            signature = RequestValidator(self.auth_token).compute_signature(url, params)
        assert self._http is not None
        response = await self._http.post(
            url, data=params, headers={"X-Twilio-Signature": signature}
        )
        with self.lock:
            self.callbacks.append((url, params, response.status_code))
        return response

    # -- calls ----------------------------------------------------------------------------------
    def _create_call(self, values: dict[str, Any]) -> dict[str, Any]:
        to, sender = str(values["To"]), str(values["From"])
        if not (values.get("Url") or values.get("Twiml") or values.get("ApplicationSid")):
            raise SpecViolation("A 'Url', 'Twiml' or 'ApplicationSid' is required.", code=21205)
        self._check_to(to)
        if not self._owned(sender):
            raise SpecViolation(
                f"The source phone number provided, {sender}, is not yet verified for your "
                "account.",
                code=21210,
            )
        call = FakeCall(_sid("CA"), dict(values))
        with self.lock:
            self.calls.append(call)
            script = self.callees.get(to, CalleeScript())
        self._spawn(self._run_call(call, script))
        return self._call_resource(call)

    def _call_resource(self, call: FakeCall) -> dict[str, Any]:
        now = _rfc2822()
        return {
            "sid": call.sid,
            "account_sid": self.account_sid,
            "api_version": "2010-04-01",
            "date_created": now,
            "date_updated": now,
            "direction": call.direction,
            "from": call.params.get("From"),
            "from_formatted": call.params.get("From"),
            "to": call.params.get("To"),
            "to_formatted": call.params.get("To"),
            "status": call.status,
            "answered_by": call.answered_by,
            "uri": f"/2010-04-01/Accounts/{self.account_sid}/Calls/{call.sid}.json",
        }

    def _update_call(self, call: FakeCall, values: dict[str, Any]) -> dict[str, Any]:
        if values.get("Status") in ("completed", "canceled"):
            with self.lock:
                call.hang_up_requested = True
        return self._call_resource(call)

    async def _inbound_call(self, from_: str, to: str, script: CalleeScript) -> FakeCall:
        number = self.number(to)
        if number is None or not number.voice_url:
            raise RuntimeError(f"{to} has no VoiceUrl: reserve it first")
        call = FakeCall(
            _sid("CA"),
            {
                "From": from_,
                "To": to,
                "Url": number.voice_url,
                "StatusCallback": number.status_callback,
            },
            direction="inbound",
        )
        with self.lock:
            self.calls.append(call)
        await self._run_call(call, script)
        return call

    def _call_params(self, call: FakeCall) -> dict[str, str]:
        params = {
            "CallSid": call.sid,
            "AccountSid": self.account_sid,
            "From": str(call.params.get("From", "")),
            "To": str(call.params.get("To", "")),
            "CallStatus": call.status,
            "Direction": call.direction,
            "ApiVersion": "2010-04-01",
        }
        if call.answered_by is not None:
            params["AnsweredBy"] = call.answered_by
        return params

    async def _final_status(self, call: FakeCall, status: str, started: float | None) -> None:
        with self.lock:
            if call.done:
                return
            call.done = True
            call.status = status
            call.statuses.append(status)
        url = call.params.get("StatusCallback")
        if not url:
            return
        params = self._call_params(call)
        params["CallStatus"] = status
        params["CallDuration"] = str(int(time.time() - started)) if started else "0"
        await self._post(str(url), params)

    async def _run_call(self, call: FakeCall, script: CalleeScript) -> None:
        await asyncio.sleep(0.01)  # ringing; after the create's answer
        if script.answer in ("no-answer", "busy", "failed"):
            await self._final_status(call, script.answer, None)
            return
        started = time.time()
        detection = call.params.get("MachineDetection")
        with self.lock:
            call.status = "in-progress"
            call.statuses.append("in-progress")
            if detection in ("Enable", "DetectMessageEnd"):
                if script.answer == "machine":
                    call.answered_by = (
                        "machine_end_beep" if detection == "DetectMessageEnd" else "machine_start"
                    )
                else:
                    call.answered_by = "human"
        says = list(script.says)
        gathers = 0
        url = str(call.params.get("Url", ""))
        extra: dict[str, str] = {}
        for _step in range(100):
            if call.hang_up_requested or not url:
                break
            response = await self._post(url, {**self._call_params(call), **extra})
            extra = {}
            with self.lock:
                call.twiml.append(response.text)
            try:
                root = ET.fromstring(response.text)
            except ET.ParseError:
                break
            next_url: str | None = None
            ended = False
            for verb in root:
                if call.hang_up_requested:
                    ended = True
                    break
                tag = verb.tag
                if tag == "Say":
                    with self.lock:
                        call.said.append((verb.text or "").strip())
                elif tag == "Pause":
                    continue
                elif tag == "Hangup" or tag == "Reject":
                    ended = True
                    break
                elif tag == "Redirect":
                    next_url = (verb.text or "").strip()
                    break
                elif tag == "Dial":
                    number = (verb.text or "").strip()
                    child = verb.find("Number")
                    if child is not None and child.text:
                        number = child.text.strip()
                    with self.lock:
                        call.transferred_to = number
                    ended = True
                    break
                elif tag == "Gather":
                    for inner in verb:
                        if inner.tag == "Say":
                            with self.lock:
                                call.said.append((inner.text or "").strip())
                    if script.answer == "machine":
                        continue  # a machine says nothing back
                    if not says or (
                        script.hang_up_after is not None and gathers >= script.hang_up_after
                    ):
                        ended = True  # the callee hangs up
                        break
                    gathers += 1
                    speech = says.pop(0)
                    if script.seconds_per_turn:
                        await asyncio.sleep(script.seconds_per_turn)
                    with self.lock:
                        call.heard.append(speech)
                    if speech is None:
                        continue  # no input: Twilio goes on after the Gather
                    next_url = verb.get("action") or url
                    extra = {"SpeechResult": speech, "Confidence": "0.92"}
                    break
            if ended or next_url is None:
                break
            url = next_url
        await self._final_status(call, "completed", started)
