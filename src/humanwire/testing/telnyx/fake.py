"""``FakeTelnyx``: one Telnyx account played locally (the module docstring of
``humanwire.testing.telnyx`` lists what it checks and offers): its state, the REST API,
the phone's side and the TeXML loop, over the records of ``records``, served by
``server.TelnyxFakeServer``."""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import json
import re
import secrets
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urljoin

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from typing_extensions import is_typeddict

from .._fake_server import FakeBackground, poll_until
from ..callee import BargeIn, CalleeScript
from .contract import ContractViolation, check, query, wire_fields
from .records import (
    CALLBACK_TIMEOUT,
    E164,
    RELAY_FRAMES,
    TITLES,
    FakeCall,
    FakeMessage,
    FakeNumber,
    FakeRequest,
    Next,
    Violation,
    now,
    page,
    published_types,
)

__all__ = [
    "RELAY_FRAMES",
    "BargeIn",
    "CalleeScript",
    "FakeCall",
    "FakeMessage",
    "FakeNumber",
    "FakeRequest",
    "FakeTelnyx",
    "Violation",
]

T = TypeVar("T")


# -- the account ------------------------------------------------------------------------
class FakeTelnyx:
    """One Telnyx account. Safe to drive from the test's thread while the server runs
    the app on its own loop (state changes hold ``lock``)."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        account_sid: str | None = None,
        connection_id: str | None = None,
        messaging_profile_id: str | None = None,
        auto_status: bool = True,
        signing_seed: bytes | None = None,
    ) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        self.api_key = api_key or "KEY" + secrets.token_hex(16).upper()
        self.account_sid = account_sid or str(uuid.uuid4())
        self.connection_id = connection_id or str(secrets.randbelow(10**18) + 10**18)
        self.messaging_profile_id = messaging_profile_id or str(uuid.uuid4())
        # A key pair of its own: the service is given the public half, nothing secret.
        # ``signing_seed`` (32 bytes) fixes it, for tests that sign requests themselves.
        self._signing_key = (
            Ed25519PrivateKey.from_private_bytes(signing_seed)
            if signing_seed is not None
            else Ed25519PrivateKey.generate()
        )
        raw = self._signing_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_key = base64.b64encode(raw).decode()
        self.auto_status = auto_status
        self.types = published_types()
        self.lock = threading.RLock()
        self.background = FakeBackground(
            "fake Telnyx",
            "TelnyxFakeServer",
            self.lock,
            self._record_error,
            http_timeout=CALLBACK_TIMEOUT,
        )
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.background.cancel_all()
            self.numbers: dict[str, FakeNumber] = {}
            self.available: list[str] = []
            self.messages: list[FakeMessage] = []
            self.calls: list[FakeCall] = []
            self.requests: list[FakeRequest] = []
            self.callbacks: list[tuple[str, bytes, int]] = []
            self.violations: list[Violation] = []
            self.errors: list[str] = []
            self.messaging_webhook_url: str | None = None
            """The messaging profile's inbound webhook (set it as the portal would)."""
            self.voice_url: str | None = None
            """The TeXML application's voice URL: where inbound calls are run from."""
            self.status_callback: str | None = None
            """The TeXML application's status callback (inbound calls' end)."""
            self._refused: dict[str, tuple[str, int]] = {}
            self._failing: dict[str, str] = {}
            self._fail_next: list[tuple[int, float | None]] = []
            self._scripts: dict[str, CalleeScript] = {}
            self.relay_setup = True
            """ConversationRelay: send ``setup`` once the socket is open (off: a carrier
            that never does, for the service's setup timeout)."""

    # -- test controls -------------------------------------------------------------------
    def add_number(self, phone_number: str) -> str:
        with self.lock:
            number = FakeNumber(str(secrets.randbelow(10**18) + 10**18), phone_number)
            self.numbers[number.id] = number
            return number.id

    def add_available(self, phone_number: str) -> None:
        with self.lock:
            self.available.append(phone_number)

    def number(self, phone_number: str) -> FakeNumber | None:
        with self.lock:
            for number in self.numbers.values():
                if number.phone_number == phone_number and not number.released:
                    return number
        return None

    def sent_to(self, to: str) -> list[FakeMessage]:
        with self.lock:
            return [m for m in self.messages if m.to == to]

    def calls_to(self, to: str) -> list[FakeCall]:
        with self.lock:
            return [c for c in self.calls if c.to == to]

    def refuse(self, to: str, code: str = "40310", status: int = 422) -> None:
        """Sends and calls to ``to`` are refused with Telnyx's ``code``."""
        with self.lock:
            self._refused[to] = (code, status)

    def fail_delivery(self, to: str, status: str = "delivery_failed") -> None:
        """Messages to ``to`` are accepted, then reported ``status``."""
        with self.lock:
            self._failing[to] = status

    def fail_next(self, status: int = 500, *, retry_after: float | None = None) -> None:
        with self.lock:
            self._fail_next.append((status, retry_after))

    def callee(self, phone_number: str, script: CalleeScript) -> None:
        with self.lock:
            self._scripts[phone_number] = script

    def hang_up(self, call_sid: str) -> None:
        with self.lock:
            for call in self.calls:
                if call.sid == call_sid and not call.done:
                    call.hang_up_requested = True
                    call.ended_by = call.ended_by or "callee"

    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        return poll_until(predicate, self.lock, timeout, "fake Telnyx")

    def _idle(self) -> bool:
        return self.background.idle and all(c.done for c in self.calls)

    def wait_idle(self, timeout: float = 5.0) -> None:
        self.wait_for(self._idle, timeout)

    # -- signing ---------------------------------------------------------------------------
    def sign(self, body: bytes, timestamp: int | None = None) -> dict[str, str]:
        """The headers Telnyx sends with ``body``: ``telnyx-timestamp`` and the Ed25519
        signature of ``"{timestamp}|{body}"``."""
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signature = self._signing_key.sign(stamp.encode() + b"|" + body)
        return {
            "telnyx-timestamp": stamp,
            "telnyx-signature-ed25519": base64.b64encode(signature).decode(),
        }

    # -- the person's side, from the test's thread ----------------------------------------
    def send_inbound(
        self,
        from_: str,
        to: str,
        text: str,
        *,
        media_urls: Sequence[str] = (),
        message_id: str | None = None,
        url: str | None = None,
    ) -> httpx.Response:
        """A person at ``from_`` texts ``to``: a signed ``message.received`` posted to the
        messaging profile's webhook (or ``url``). Returns the service's answer."""
        payload = {
            "id": message_id or str(uuid.uuid4()),
            "record_type": "message",
            "direction": "inbound",
            "type": "MMS" if media_urls else "SMS",
            "from": {"phone_number": from_, "carrier": "Fake Mobile", "line_type": "Wireless"},
            "to": [{"phone_number": to, "status": "webhook_delivered"}],
            "text": text,
            "media": [{"url": u, "content_type": "image/jpeg"} for u in media_urls],
            "received_at": now(),
        }
        target = url or self.messaging_webhook_url
        if not target:
            raise RuntimeError("no messaging_webhook_url: set it as the portal would")
        return self.background.run(self._event(target, "message.received", payload))

    def post_signed(
        self,
        url: str,
        body: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        timestamp: int | None = None,
        content_type: str = "application/json",
    ) -> httpx.Response:
        """``body`` to ``url`` signed as Telnyx signs (at ``timestamp``), or with
        ``headers`` as given: security tests."""
        sent = dict(headers) if headers is not None else self.sign(body, timestamp)
        return self.background.run(self._post(url, body, {"Content-Type": content_type, **sent}))

    def inbound_call(
        self, from_: str, to: str, script: CalleeScript, *, timeout: float = 60.0
    ) -> FakeCall:
        """A person at ``from_`` calls ``to``: run against the TeXML application's voice
        URL (``Direction`` inbound); returned once it is over."""
        return self.background.run(self._inbound_call(from_, to, script), timeout=timeout)

    # -- serving ---------------------------------------------------------------------------
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The serving loop (None while not served)."""
        return self.background.loop

    def app(self) -> Starlette:
        async def handle(request: Request) -> Response:
            return await self._handle(request)

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with self.background.serving():
                yield

        return Starlette(
            routes=[Route("/{path:path}", handle, methods=["GET", "POST", "DELETE", "PATCH"])],
            lifespan=lifespan,
        )

    def _record_error(self, problem: str) -> None:
        with self.lock:
            self.errors.append(problem)

    @staticmethod
    def _error(
        status: int, code: str, detail: str, pointer: str | None = None, **headers: str
    ) -> Response:
        error: dict[str, Any] = {
            "code": code,
            "title": TITLES.get(code, "Error"),
            "detail": detail,
        }
        if pointer is not None:
            error["source"] = {"pointer": pointer}
        return JSONResponse({"errors": [error]}, status_code=status, headers=headers or None)

    # -- the REST API --------------------------------------------------------------------
    _ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
        ("POST", re.compile(r"/v2/messages"), "messages.send"),
        ("GET", re.compile(r"/v2/phone_numbers"), "numbers.list"),
        ("PATCH", re.compile(r"/v2/phone_numbers/(?P<id>[^/]+)"), "numbers.update"),
        ("PATCH", re.compile(r"/v2/phone_numbers/(?P<id>[^/]+)/messaging"), "numbers.messaging"),
        ("DELETE", re.compile(r"/v2/phone_numbers/(?P<id>[^/]+)"), "numbers.release"),
        ("GET", re.compile(r"/v2/available_phone_numbers"), "numbers.available"),
        ("POST", re.compile(r"/v2/number_orders"), "numbers.order"),
        ("POST", re.compile(r"/v2/texml/Accounts/(?P<account_sid>[^/]+)/Calls"), "calls.create"),
        (
            "POST",
            re.compile(r"/v2/texml/Accounts/(?P<account_sid>[^/]+)/Calls/(?P<sid>[^/]+)"),
            "calls.update",
        ),
    )

    async def _handle(self, request: Request) -> Response:
        path, method = request.url.path, request.method
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self._error(401, "10009", "Could not understand the provided credentials.")
        for route_method, pattern, operation in self._ROUTES:  # noqa: B007 - used after
            matched = pattern.fullmatch(path)
            if matched and route_method == method:
                break
        else:
            return self._violation(method, path, "", "no such operation", 404, "10005")
        if matched.groupdict().get("account_sid") not in (None, self.account_sid):
            return self._violation(method, path, operation, "not this account", 404, "10005")
        # The contract: the request's parameters against the published type.
        params: Any = None
        try:
            if method in ("GET", "DELETE"):
                items = list(parse_qsl(request.url.query, keep_blank_values=True))
                kind = self.types.get(operation)
                params = query(items, kind) if kind is not None else dict(items)
                if kind is not None:
                    check(kind, params, text=True)
            else:
                if not request.headers.get("content-type", "").startswith("application/json"):
                    raise ContractViolation("the body must be application/json", "")
                params = json.loads(await request.body())
                kind = self.types[operation]
                # A path parameter the client takes as a keyword (account_sid) is a
                # field of the published type: checked as if sent.
                fields = wire_fields(kind)[0] if is_typeddict(kind) else {}
                in_path = {k: v for k, v in matched.groupdict().items() if k in fields}
                check(kind, {**in_path, **params} if isinstance(params, dict) else params)
        except (ContractViolation, ValueError) as exc:
            pointer = exc.pointer if isinstance(exc, ContractViolation) else ""
            return self._violation(method, path, operation, str(exc), 422, "10015", pointer)
        with self.lock:
            self.requests.append(FakeRequest(method, path, operation, params))
            failure = self._fail_next.pop(0) if self._fail_next else None
        if failure is not None:
            status, retry_after = failure
            headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
            return self._error(status, "10007", "Injected failure.", **headers)
        return self._operate(operation, matched.groupdict(), params)

    def _violation(
        self,
        method: str,
        path: str,
        operation: str,
        problem: str,
        status: int,
        code: str,
        pointer: str | None = None,
    ) -> Response:
        with self.lock:
            self.violations.append(Violation(method, path, f"{operation}: {problem}"))
        return self._error(status, code, problem, pointer)

    def _operate(self, operation: str, path: Mapping[str, Any], params: Any) -> Response:
        if operation == "messages.send":
            return self._send_message(params)
        if operation == "numbers.list":
            wanted = (params.get("filter") or {}).get("phone_number")
            with self.lock:
                found = [
                    n.resource()
                    for n in self.numbers.values()
                    if not n.released and (wanted is None or n.phone_number == wanted)
                ]
            return JSONResponse(page(found, params))
        if operation in ("numbers.update", "numbers.messaging", "numbers.release"):
            with self.lock:
                number = self.numbers.get(str(path["id"]))
                if number is None or number.released:
                    return self._error(404, "10005", "Resource not found.")
                if operation == "numbers.update" and "connection_id" in params:
                    number.connection_id = params["connection_id"]
                if operation == "numbers.messaging" and "messaging_profile_id" in params:
                    number.messaging_profile_id = params["messaging_profile_id"]
                if operation == "numbers.release":
                    number.released = True
                return JSONResponse({"data": number.resource()})
        if operation == "numbers.available":
            filters = params.get("filter") or {}
            country = filters.get("country_code")
            code = filters.get("national_destination_code")
            with self.lock:
                offers = [
                    {"phone_number": n, "record_type": "available_phone_number"}
                    for n in self.available
                    if (country != "US" or n.startswith("+1"))
                    and (country != "GB" or n.startswith("+44"))
                    and (not code or n[2:].startswith(code))
                ]
            return JSONResponse({"data": offers, "meta": {"total_results": len(offers)}})
        if operation == "numbers.order":
            return self._order(params)
        if operation == "calls.create":
            return self._create_call(params)
        return self._update_call(str(path["sid"]), params)

    def _send_message(self, params: dict[str, Any]) -> Response:
        sender, to = str(params.get("from") or ""), str(params.get("to") or "")
        if "text" not in params and "media_urls" not in params:
            return self._violation(
                "POST",
                "/v2/messages",
                "messages.send",
                "text or media_urls is required",
                422,
                "10004",
                "/text",
            )
        if self.number(sender) is None:
            return self._error(422, "40305", f"{sender} is not a number of this account", "/from")
        if not E164.fullmatch(to):
            return self._error(422, "40310", "Invalid 'to' address", "/to")
        with self.lock:
            refused = self._refused.get(to)
        if refused is not None:
            return self._error(refused[1], refused[0], "Refused by the fake (refuse())", "/to")
        message = FakeMessage(str(uuid.uuid4()), dict(params))
        with self.lock:
            self.messages.append(message)
        if self.auto_status and params.get("webhook_url"):
            self.background.spawn(self._reports(message), f"reports of {message.id}")
        return JSONResponse({"data": self._message_resource(message)})

    def _message_resource(self, message: FakeMessage) -> dict[str, Any]:
        return {
            "id": message.id,
            "record_type": "message",
            "direction": "outbound",
            "type": "SMS",
            "from": {"phone_number": message.from_},
            "to": [{"phone_number": message.to, "status": message.status}],
            "text": message.text,
            "messaging_profile_id": self.messaging_profile_id,
            "webhook_url": message.params.get("webhook_url"),
        }

    async def _reports(self, message: FakeMessage) -> None:
        await asyncio.sleep(0.01)
        with self.lock:
            final = self._failing.get(message.to, "delivered")
        for status, event in (("sent", "message.sent"), (final, "message.finalized")):
            with self.lock:
                message.status = status
                message.statuses.append(status)
            await self._event(
                str(message.params["webhook_url"]), event, self._message_resource(message)
            )

    def _order(self, params: dict[str, Any]) -> Response:
        wanted = [str(entry["phone_number"]) for entry in params.get("phone_numbers") or []]
        with self.lock:
            missing = [n for n in wanted if n not in self.available]
            if missing or not wanted:
                return self._error(422, "10017", f"not available: {', '.join(missing)}")
            ordered = []
            for phone in wanted:
                self.available.remove(phone)
                number_id = self.add_number(phone)
                number = self.numbers[number_id]
                number.bought = True
                number.connection_id = params.get("connection_id")
                number.messaging_profile_id = params.get("messaging_profile_id")
                ordered.append({"id": number_id, "phone_number": phone, "status": "success"})
        order = {
            "id": str(uuid.uuid4()),
            "record_type": "number_order",
            "status": "success",
            "phone_numbers": ordered,
        }
        return JSONResponse({"data": order})

    # -- webhooks --------------------------------------------------------------------------
    async def _event(self, url: str, event_type: str, payload: dict[str, Any]) -> httpx.Response:
        body = json.dumps(
            {
                "data": {
                    "event_type": event_type,
                    "id": str(uuid.uuid4()),
                    "occurred_at": now(),
                    "payload": payload,
                    "record_type": "event",
                },
                "meta": {"attempt": 1, "delivered_to": url},
            }
        ).encode()
        return await self._post(url, body, {"Content-Type": "application/json", **self.sign(body)})

    async def _post(self, url: str, body: bytes, headers: Mapping[str, str]) -> httpx.Response:
        response = await self.background.http.post(url, content=body, headers=dict(headers))
        with self.lock:
            self.callbacks.append((url, body, response.status_code))
        return response

    async def _form(self, url: str, params: Mapping[str, str]) -> httpx.Response:
        body = urlencode(params).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", **self.sign(body)}
        return await self._post(url, body, headers)

    # -- calls ---------------------------------------------------------------------------
    def _create_call(self, params: dict[str, Any]) -> Response:
        to, sender = str(params.get("To") or ""), str(params.get("From") or "")
        if params.get("ApplicationSid") not in (None, self.connection_id):
            return self._error(
                422,
                "10015",
                "ApplicationSid is not a TeXML application of this account",
                "/ApplicationSid",
            )
        if self.number(sender) is None:
            return self._error(422, "10015", f"{sender} is not a number of this account", "/From")
        if not E164.fullmatch(to):
            return self._error(422, "10016", "Phone number must be in +E.164 format", "/To")
        with self.lock:
            refused = self._refused.get(to)
        if refused is not None:
            return self._error(refused[1], refused[0], "Refused by the fake (refuse())", "/To")
        call = FakeCall("v3:" + secrets.token_urlsafe(16), dict(params))
        with self.lock:
            self.calls.append(call)
            script = self._scripts.get(to, CalleeScript(answer="no-answer"))
        self.background.spawn(self._run_call(call, script), f"call {call.sid}")
        return JSONResponse({"from": sender, "to": to, "status": "queued"})

    def _update_call(self, sid: str, params: dict[str, Any]) -> Response:
        with self.lock:
            call = next((c for c in self.calls if c.sid == sid), None)
            if call is None:
                return self._error(404, "10005", "Resource not found.")
            if params.get("Status") in ("completed", "canceled") and not call.done:
                call.hang_up_requested = True
                call.ended_by = call.ended_by or "api"
        return JSONResponse({"sid": sid, "status": call.status})

    def _call_params(self, call: FakeCall, status: str | None = None) -> dict[str, str]:
        params = {
            "CallSid": call.sid,
            "AccountSid": self.account_sid,
            "From": call.from_,
            "To": call.to,
            "CallStatus": status or call.status,
            "Direction": "inbound" if call.direction == "inbound" else "outbound-api",
        }
        if call.answered_by is not None:
            params["AnsweredBy"] = call.answered_by
        return params

    def _set_status(self, call: FakeCall, status: str) -> None:
        with self.lock:
            call.status = status
            call.statuses.append(status)

    async def _run_call(self, call: FakeCall, script: CalleeScript) -> None:
        try:
            await asyncio.sleep(0.01)
            self._set_status(call, "ringing")
            if script.ring_seconds:
                await asyncio.sleep(script.ring_seconds)
            if call.hang_up_requested:
                return await self._finish(call, "canceled")
            if script.answer in ("no-answer", "busy", "failed"):
                return await self._finish(call, script.answer)
            if call.params.get("MachineDetection") in ("Enable", "DetectMessageEnd"):
                call.answered_by = "machine_start" if script.answer == "machine" else "human"
            self._set_status(call, "in-progress")
            url = call.params.get("Url") or self.voice_url
            if url:
                await self._converse(call, script, str(url))
            await self._finish(call, "completed")
        finally:
            with self.lock:
                call.done = True

    async def _finish(self, call: FakeCall, status: str) -> None:
        self._set_status(call, status)
        url = call.params.get("StatusCallback") or (
            self.status_callback if call.direction == "inbound" else None
        )
        if url:
            await self._form(str(url), self._call_params(call, status))

    async def _inbound_call(self, from_: str, to: str, script: CalleeScript) -> FakeCall:
        call = FakeCall("v3:" + secrets.token_urlsafe(16), {"To": to, "From": from_}, "inbound")
        with self.lock:
            self.calls.append(call)
        await self._run_call(call, script)
        return call

    async def _converse(self, call: FakeCall, script: CalleeScript, url: str) -> None:
        """Runs the TeXML: ``<Say>``, ``<Gather input="speech">`` (the next of ``says``
        as ``SpeechResult``; silence goes on after it), ``<Redirect>``, ``<Dial>``,
        ``<Hangup>``, ``<Pause>``; anything else is the service's error."""
        says: collections.deque[str | BargeIn | None] = collections.deque(script.says)
        step: Next | None = Next(url)
        for _turn in range(100):
            if step is None or call.hang_up_requested:
                return
            try:
                response = await self._form(step.url, {**self._call_params(call), **step.extra})
            except httpx.HTTPError as exc:
                call.errors.append(f"{step.url}: {exc!r}")
                return
            if not response.is_success:
                call.errors.append(f"{step.url} answered {response.status_code}")
                self._record_error(f"call {call.sid}: {step.url} answered {response.status_code}")
                return
            document, base = response.text, step.url
            with self.lock:
                call.texml.append(document)
            try:
                root = ET.fromstring(document)
            except ET.ParseError as exc:
                call.errors.append(f"not TeXML: {exc}")
                self._record_error(f"call {call.sid}: not TeXML: {exc}")
                return
            step = None
            for verb in root:
                if call.hang_up_requested:
                    return
                text = "".join(verb.itertext()).strip()
                if verb.tag == "Say":
                    call.said.append(text)
                elif verb.tag == "Pause":
                    continue
                elif verb.tag == "Hangup":
                    call.ended_by = call.ended_by or "service"
                    return
                elif verb.tag == "Redirect":
                    step = Next(urljoin(base, text))
                    break
                elif verb.tag == "Connect" and verb.find("ConversationRelay") is not None:
                    step = await self._relay(call, script, verb, base, says)
                    if step is None:
                        return
                    break
                elif verb.tag == "Dial":
                    numbers = [n.text for n in verb if n.tag == "Number" and n.text]
                    call.transferred_to = (numbers[-1] if numbers else text).strip()
                elif verb.tag == "Gather":
                    for inner in verb:
                        if inner.tag == "Say":
                            call.said.append("".join(inner.itertext()).strip())
                    if script.answer == "machine":
                        continue
                    if not says or (
                        script.hang_up_after is not None and len(call.heard) >= script.hang_up_after
                    ):
                        call.hang_up_requested = True
                        call.ended_by = call.ended_by or "callee"
                        return
                    said = says.popleft()
                    # a BargeIn is an ordinary answer to a <Gather> (its <Say> is cut by speech)
                    speech = said.text if isinstance(said, BargeIn) else said
                    if script.seconds_per_turn:
                        await asyncio.sleep(script.seconds_per_turn)
                    call.heard.append(speech)
                    if speech is None:
                        continue  # silence: TeXML goes on after the Gather
                    action = urljoin(base, verb.get("action") or base)
                    extra = {"SpeechResult": speech, "Confidence": f"{script.confidence:.2f}"}
                    step = Next(action, extra)
                    break
                else:
                    call.errors.append(f"<{verb.tag}> is not played by the fake")
                    self._record_error(f"call {call.sid}: <{verb.tag}> is not played")
            if step is None and call.ended_by is None:
                call.ended_by = "service"

    # -- ConversationRelay ------------------------------------------------------------------
    async def _relay(
        self,
        call: FakeCall,
        script: CalleeScript,
        verb: ET.Element,
        base: str,
        says: collections.deque[str | BargeIn | None],
    ) -> Next | None:
        """``<Connect><ConversationRelay url=...>``: says the ``welcomeGreeting``, opens
        the WebSocket at ``url`` as given (Telnyx publishes no handshake signature), sends
        Telnyx's ``setup`` (unless ``relay_setup`` is off) and plays the callee
        (``testing._relay``); each frame the service sends is checked against Telnyx's
        published frames (``RELAY_FRAMES``). When the session ends (the service's
        ``end`` or its closing the socket) the ``<Connect>``'s action is asked what
        follows; None: the call is over (the callee hung up, or no action)."""
        from websockets.exceptions import InvalidStatus, WebSocketException

        from .._relay import relay_session

        relay = verb.find("ConversationRelay")
        assert relay is not None
        url = relay.get("url", "")
        if not url.startswith(("ws://", "wss://")):
            self._call_problem(call, f"ConversationRelay url {url!r} is not ws:// or wss://")
            return None
        greeting = relay.get("welcomeGreeting")
        if greeting:
            with self.lock:
                call.said.append(greeting)
        status = "failed"
        try:
            status, _ = await relay_session(
                url,
                headers={},
                setup=self._setup(call) if self.relay_setup else None,
                call=call,
                script=script,
                says=says,
                lock=self.lock,
                wait=asyncio.sleep,
                hang_up_now=lambda: call.hang_up_requested,
                greeted=bool(greeting),
                check=lambda message: self._check_frame(call, message),
                open_timeout=CALLBACK_TIMEOUT,
            )
        except InvalidStatus as exc:
            self._call_problem(
                call, f"ConversationRelay: {url} refused the WebSocket ({exc.response.status_code})"
            )
            return None
        except (OSError, WebSocketException, TimeoutError) as exc:
            self._call_problem(call, f"ConversationRelay: {url}: {exc!r}")
        action = verb.get("action")
        if status == "hung-up" or not action:
            return None
        return Next(urljoin(base, action))

    def _setup(self, call: FakeCall) -> dict[str, Any]:
        return {
            "type": "setup",
            "sessionId": str(uuid.uuid4()),
            "accountSid": self.account_sid,
            "callSid": call.sid,
            "callControlId": call.sid,
            "callSessionId": str(uuid.uuid4()),
            "callLegId": str(uuid.uuid4()),
            "from": call.from_,
            "to": call.to,
            "direction": "inbound" if call.direction == "inbound" else "outbound",
            "callerName": "",
            "callStatus": "active",
            "customParameters": {},
        }

    def _check_frame(self, call: FakeCall, message: Mapping[str, Any]) -> None:
        """A frame the service sent, against Telnyx's published ones: a known ``type``,
        only its fields, each of its type. Anything else is a violation (Telnyx answers
        it with an ``error`` frame)."""
        kind = message.get("type")
        fields = RELAY_FRAMES.get(str(kind))
        if fields is None:
            problem = f"unknown type {kind!r}"
        else:
            extra = sorted(set(message) - {"type"} - set(fields))
            wrong = [
                name
                for name, kinds in fields.items()
                if name in message and not isinstance(message[name], kinds)
            ]
            if extra:
                problem = f"{kind}: fields Telnyx does not publish: {', '.join(extra)}"
            elif wrong:
                problem = f"{kind}: wrong type for {', '.join(wrong)}"
            else:
                return
        with self.lock:
            self.violations.append(Violation("WS", "ConversationRelay", problem))
        self._call_problem(call, f"ConversationRelay frame: {problem}")

    def _call_problem(self, call: FakeCall, problem: str) -> None:
        with self.lock:
            call.errors.append(problem)
        self._record_error(f"call {call.sid}: {problem}")
