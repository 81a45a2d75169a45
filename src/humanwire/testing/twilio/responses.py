"""The fake Twilio's REST API over HTTP: each request found in the description
(``spec``), authorised, checked against Twilio's rules, then applied to the fake's state
(``FakeTwilio``: numbers, messages, calls) and answered as Twilio answers. Nothing here
keeps state of its own.

Error codes used (Twilio's, https://www.twilio.com/docs/errors/<code>): see
``humanwire.testing.twilio.fake``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..callee import CalleeScript
from .records import (
    API_VERSION,
    CALL_EVENTS,
    MISSING_CODES,
    NUMBER_FIELDS,
    REFUSAL_MESSAGES,
    URL_PARAMETERS,
    WHATSAPP,
    Failure,
    FakeCall,
    FakeMessage,
    FakeNumber,
    FakeRequest,
    InjectedRefusal,
    Violation,
    contains_pattern,
    is_e164,
    new_sid,
    rfc2822,
    segments,
)
from .spec import Operation, SpecViolation

if TYPE_CHECKING:
    from .fake import FakeTwilio

__all__ = ["TwilioResponses"]


class TwilioResponses:
    """The HTTP face of ``fake``: ``handle`` answers one REST request."""

    def __init__(self, fake: FakeTwilio) -> None:
        self.fake = fake

    def _authorized(self, request: Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return secrets.compare_digest(user, self.fake.account_sid) and secrets.compare_digest(
            password, self.fake.auth_token
        )

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

    async def handle(self, request: Request) -> Response:
        method, path = request.method, request.url.path
        raw = await request.body()
        body_items = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
        query_items = list(request.query_params.multi_items())
        items = body_items if method == "POST" else query_items
        with self.fake.lock:
            self.fake.requests.append(FakeRequest(method, path, items))
            delay = self.fake._delay
        if delay:
            await asyncio.sleep(delay)
        operation: Operation | None = None
        try:
            if not self._authorized(request):
                raise SpecViolation("Authenticate", code=20003, status=401)
            operation = self.fake.spec.operation(method, path)
            if operation.path_params.get("AccountSid") != self.fake.account_sid:
                raise SpecViolation(
                    "The AccountSid in the path is not the authenticated account's",
                    code=20003,
                    status=401,
                )
            if method == "POST":
                kind = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
                if raw and kind not in operation.content_types:
                    raise SpecViolation(
                        f"The body must be application/x-www-form-urlencoded, not {kind!r}",
                        reason="invalid",
                    )
                values = self.fake.spec.check_body(operation, body_items)
            else:
                values = self.fake.spec.check_query(operation, query_items)
            failure = self._take_failure(path)
            if failure is not None:
                headers = (
                    {"Retry-After": str(max(1, round(failure.retry_after)))}
                    if failure.retry_after is not None
                    else None
                )
                message = "Too Many Requests" if failure.status == 429 else "Service unavailable"
                return self._error(failure.status, failure.code, message, headers)
            status, body = self._operate(operation, values)
        except InjectedRefusal as exc:
            return self._error(exc.status, exc.code, exc.message)
        except SpecViolation as exc:
            code = self._code_for(exc, operation)
            with self.fake.lock:
                self.fake.violations.append(
                    Violation(method, path, items, code, exc.message, exc.status)
                )
            headers = (
                {"WWW-Authenticate": 'Basic realm="Twilio API"'} if exc.status == 401 else None
            )
            return self._error(exc.status, code, exc.message, headers)
        if status == 204:
            return Response(status_code=204)
        return JSONResponse(body, status)

    @staticmethod
    def _code_for(exc: SpecViolation, operation: Operation | None) -> int:
        """Twilio's code for a refusal found in the description."""
        name, key = exc.parameter, operation.key if operation else ""
        if name is None or exc.reason not in ("missing", "invalid", "format"):
            return exc.code
        if exc.reason == "missing":
            return MISSING_CODES.get((key, name), exc.code)
        if name.endswith("Method") and "/Calls" in key:
            return 21209
        if "/IncomingPhoneNumbers" in key and (name.endswith("Url") or name == "StatusCallback"):
            return 21402
        if name in URL_PARAMETERS and exc.reason == "format":
            return URL_PARAMETERS[name]
        if name == "StatusCallbackEvent":
            return 21626
        if "/Calls" in key and name == "Twiml":
            return 21200
        return exc.code

    def _take_failure(self, path: str) -> Failure | None:
        with self.fake.lock:
            for failure in self.fake._failures:
                if failure.match is None or failure.match in path:
                    failure.times -= 1
                    if failure.times <= 0:
                        self.fake._failures.remove(failure)
                    return failure
        return None

    def _operate(self, operation: Operation, values: dict[str, Any]) -> tuple[int, Any]:
        key = operation.key
        sid = operation.path_params.get("Sid", "")
        if key == "POST /Messages.json":
            return 201, self._create_message(values)
        if key == "GET /Messages.json":
            return 200, self._list_messages(values)
        if key == "GET /Messages/{Sid}.json":
            return 200, self._message_resource(self._message(sid))
        if key == "POST /Messages/{Sid}.json":
            return 200, self._update_message(self._message(sid), values)
        if key == "DELETE /Messages/{Sid}.json":
            message = self._message(sid)
            with self.fake.lock:
                message.deleted = True
            return 204, None
        if key == "POST /Calls.json":
            return 201, self._create_call(values)
        if key == "GET /Calls.json":
            return 200, self._list_calls(values)
        if key == "GET /Calls/{Sid}.json":
            return 200, self._call_resource(self._call(sid))
        if key == "POST /Calls/{Sid}.json":
            return 200, self._update_call(self._call(sid), values)
        if key == "DELETE /Calls/{Sid}.json":
            call = self._call(sid)
            if not call.done:
                raise SpecViolation("A call in progress cannot be deleted", code=21220)
            with self.fake.lock:
                self.fake.calls.remove(call)
            return 204, None
        if key == "GET /IncomingPhoneNumbers.json":
            return 200, self._list_numbers(values)
        if key == "POST /IncomingPhoneNumbers.json":
            return 201, self._buy(values)
        if key == "GET /IncomingPhoneNumbers/{Sid}.json":
            return 200, self._number(sid).resource(self.fake.account_sid)
        if key == "POST /IncomingPhoneNumbers/{Sid}.json":
            number = self._number(sid)
            self._configure(number, values)
            return 200, number.resource(self.fake.account_sid)
        if key == "DELETE /IncomingPhoneNumbers/{Sid}.json":
            number = self._number(sid)
            with self.fake.lock:
                number.released = True
                number.updated = time.time()
            return 204, None
        if key == "GET /AvailablePhoneNumbers/{CountryCode}/Local.json":
            return 200, self._list_available(operation.path_params["CountryCode"], values)
        raise SpecViolation(f"The fake does not implement {key}", code=20004, status=405)

    def _page(
        self, key: str, items: list[Any], uri: str, values: Mapping[str, Any]
    ) -> dict[str, Any]:
        size = int(values.get("PageSize", 50))
        page = int(values.get("Page", 0))
        chunk = items[page * size : (page + 1) * size]
        base = f"/{API_VERSION}/Accounts/{self.fake.account_sid}/{uri}"

        def link(number: int) -> str:
            return f"{base}?PageSize={size}&Page={number}&PageToken=PA{number}"

        return {
            key: chunk,
            "end": page * size + max(len(chunk) - 1, 0),
            "first_page_uri": link(0),
            "next_page_uri": link(page + 1) if (page + 1) * size < len(items) else None,
            "page": page,
            "page_size": size,
            "previous_page_uri": link(page - 1) if page > 0 else None,
            "start": page * size,
            "uri": link(page),
        }

    def _message(self, sid: str) -> FakeMessage:
        with self.fake.lock:
            for message in self.fake.messages:
                if message.sid == sid and not message.deleted:
                    return message
        raise SpecViolation(
            f"The requested resource /Messages/{sid}.json was not found", code=20404, status=404
        )

    def _call(self, sid: str) -> FakeCall:
        with self.fake.lock:
            for call in self.fake.calls:
                if call.sid == sid:
                    return call
        raise SpecViolation(
            f"The requested resource /Calls/{sid}.json was not found", code=20404, status=404
        )

    def _number(self, sid: str) -> FakeNumber:
        with self.fake.lock:
            number = self.fake.numbers.get(sid)
        if number is None or number.released:
            raise SpecViolation(
                f"The requested resource /IncomingPhoneNumbers/{sid}.json was not found",
                code=20404,
                status=404,
            )
        return number

    def _check_refused(self, to: str) -> None:
        with self.fake.lock:
            refused = self.fake._refused.get(to.removeprefix(WHATSAPP))
        if refused is not None:
            code, status = refused
            message = REFUSAL_MESSAGES.get(code, f"Twilio refuses {to}")
            raise InjectedRefusal(message, code=code, status=status)

    def _create_message(self, values: dict[str, Any]) -> dict[str, Any]:
        to, sender = str(values["To"]), str(values.get("From", ""))
        body = str(values.get("Body", ""))
        media = list(values.get("MediaUrl", []))
        if not sender and not values.get("MessagingServiceSid"):
            raise SpecViolation("A 'From' phone number is required.", code=21603)
        if not (body or media or values.get("ContentSid")):
            raise SpecViolation("A text message body or media urls must be specified.", code=21602)
        if len(body) > 1600:
            raise SpecViolation("The message body exceeds the 1600 character limit.", code=21617)
        if len(media) > 10:
            raise SpecViolation("The number of media files exceeds the limit of 10.", code=21623)
        if sender and to.startswith(WHATSAPP) != sender.startswith(WHATSAPP):
            raise SpecViolation(
                "Invalid From and To pair. From and To should be of the same channel",
                code=21910,
            )
        if values.get("ContentVariables") is not None:
            if not values.get("ContentSid"):
                raise SpecViolation("ContentVariables needs a ContentSid.", code=21656)
            try:
                variables = json.loads(str(values["ContentVariables"]))
            except ValueError:
                variables = None
            if not isinstance(variables, dict):
                raise SpecViolation(
                    "The ContentVariables parameter is invalid: not a JSON object.", code=21656
                )
        if not is_e164(to.removeprefix(WHATSAPP)):
            raise SpecViolation(f"The 'To' number {to} is not a valid phone number.", code=21211)
        if sender and self.fake.number(sender) is None:
            if sender.startswith(WHATSAPP):
                raise SpecViolation(
                    "Twilio could not find a Channel with the specified From address",
                    code=63007,
                )
            raise SpecViolation(
                f"The From phone number {sender} is not a valid, SMS-capable inbound phone "
                "number or short code for your account.",
                code=21606,
            )
        self._check_refused(to)
        message = FakeMessage(new_sid("SM" if not media else "MM"), dict(values))
        with self.fake.lock:
            self.fake.messages.append(message)
            failing = self.fake._undeliverable.get(to.removeprefix(WHATSAPP))
        if self.fake.auto_status:
            callback = values.get("StatusCallback")
            self.fake.background.spawn(
                self.fake._report(message, str(callback) if callback else None, failing),
                f"status callbacks of {message.sid}",
            )
        return self._message_resource(message)

    def _message_resource(self, message: FakeMessage) -> dict[str, Any]:
        values = message.params
        body = str(values.get("Body", ""))
        uri = f"/{API_VERSION}/Accounts/{self.fake.account_sid}/Messages/{message.sid}"
        with self.fake.lock:
            return {
                "sid": message.sid,
                "account_sid": self.fake.account_sid,
                "api_version": API_VERSION,
                "body": body,
                "date_created": rfc2822(message.created),
                "date_sent": rfc2822(message.sent) if message.sent else None,
                "date_updated": rfc2822(message.updated),
                "direction": "outbound-api",
                "error_code": message.error_code,
                "error_message": None,
                "from": values.get("From") or None,
                "messaging_service_sid": values.get("MessagingServiceSid"),
                "num_media": str(len(message.media_urls)),
                "num_segments": str(segments(body)),
                "price": None,
                "price_unit": "USD",
                "status": message.status,
                "subresource_uris": {"media": f"{uri}/Media.json"},
                "to": values.get("To"),
                "uri": f"{uri}.json",
            }

    def _list_messages(self, values: Mapping[str, Any]) -> dict[str, Any]:
        with self.fake.lock:
            found = [
                m
                for m in reversed(self.fake.messages)
                if not m.deleted
                and values.get("To", m.to) == m.to
                and values.get("From", m.from_) == m.from_
            ]
        resources = [self._message_resource(m) for m in found]
        return self._page("messages", resources, "Messages.json", values)

    def _update_message(self, message: FakeMessage, values: Mapping[str, Any]) -> dict[str, Any]:
        with self.fake.lock:
            if "Body" in values:
                if values["Body"] != "" or message.status not in (
                    "sent",
                    "delivered",
                    "undelivered",
                    "failed",
                    "read",
                    "received",
                ):
                    raise SpecViolation(
                        "Only the body of a message that is over can be redacted (Body='')",
                        code=20009,
                    )
                message.params["Body"] = ""
            if values.get("Status") == "canceled":
                if message.status != "scheduled":
                    raise SpecViolation("Only a scheduled message can be canceled", code=30409)
                message.status = "canceled"
            message.updated = time.time()
        return self._message_resource(message)

    def _configure(self, number: FakeNumber, values: Mapping[str, Any]) -> None:
        with self.fake.lock:
            for name, value in values.items():
                number.params[name] = value
                attribute = NUMBER_FIELDS.get(name)
                if attribute is not None:
                    if attribute.endswith("method"):
                        setattr(number, attribute, str(value or "POST"))
                    else:
                        setattr(number, attribute, str(value) if value else None)
            number.updated = time.time()

    def _list_numbers(self, values: Mapping[str, Any]) -> dict[str, Any]:
        wanted = values.get("PhoneNumber")
        name = values.get("FriendlyName")
        with self.fake.lock:
            found = [
                n.resource(self.fake.account_sid)
                for n in self.fake.numbers.values()
                if not n.released
                and (wanted is None or n.phone_number == wanted)
                and (name is None or (n.friendly_name or n.phone_number) == name)
            ]
        return self._page("incoming_phone_numbers", found, "IncomingPhoneNumbers.json", values)

    def _buy(self, values: Mapping[str, Any]) -> dict[str, Any]:
        phone = values.get("PhoneNumber")
        area = values.get("AreaCode")
        with self.fake.lock:
            if phone is None and area is None:
                raise SpecViolation(
                    "You must provide an AreaCode or a PhoneNumber to purchase a number.",
                    code=21421,
                )
            if phone is None:
                if not re.fullmatch(r"\d{3}", str(area)):
                    raise SpecViolation(f"AreaCode {area} is not valid.", code=21451)
                phone = next(
                    (p for p, a in self.fake.available.items() if a.area_code == str(area)), None
                )
                if phone is None:
                    raise SpecViolation(f"No phone numbers found in area code {area}.", code=21452)
            elif not is_e164(str(phone)):
                raise SpecViolation(f"PhoneNumber {phone} is not valid.", code=21421)
            if phone not in self.fake.available:
                raise SpecViolation(
                    f"The PhoneNumber {phone} is not available to purchase.", code=21422
                )
            del self.fake.available[phone]
            number = FakeNumber(new_sid("PN"), str(phone), bought=True)
            self.fake.numbers[number.sid] = number
            self._configure(
                number, {k: v for k, v in values.items() if k not in ("PhoneNumber", "AreaCode")}
            )
        return number.resource(self.fake.account_sid)

    def _list_available(self, country: str, values: Mapping[str, Any]) -> dict[str, Any]:
        area = values.get("AreaCode")
        contains = contains_pattern(values.get("Contains"))
        with self.fake.lock:
            offers = [
                a.resource()
                for a in self.fake.available.values()
                if a.country == country
                and (area is None or a.area_code == str(area))
                and (contains is None or contains.search(a.phone_number) is not None)
                and values.get("InRegion", a.region) == a.region
                and values.get("InLocality", a.locality) == a.locality
            ]
        uri = f"AvailablePhoneNumbers/{country}/Local.json"
        return self._page("available_phone_numbers", offers, uri, values)

    def _create_call(self, values: dict[str, Any]) -> dict[str, Any]:
        to, sender = str(values["To"]), str(values["From"])
        if not (values.get("Url") or values.get("Twiml") or values.get("ApplicationSid")):
            raise SpecViolation("A 'Url', 'Twiml' or 'ApplicationSid' is required.", code=21205)
        events = list(values.get("StatusCallbackEvent", []))
        unknown = [e for e in events if e not in CALL_EVENTS]
        if unknown:
            raise SpecViolation(f"Invalid StatusCallbackEvent {unknown[0]!r}", code=21626)
        detection = values.get("MachineDetection")
        if detection is not None and detection not in ("Enable", "DetectMessageEnd"):
            raise SpecViolation("MachineDetection must be Enable or DetectMessageEnd", code=21200)
        if values.get("AsyncAmd") is not None and values["AsyncAmd"] not in ("true", "false"):
            raise SpecViolation("AsyncAmd must be true or false", code=21200)
        twiml = values.get("Twiml")
        if twiml is not None and len(str(twiml)) > 4000:
            raise SpecViolation("Twiml is longer than 4000 characters", code=21200)
        if not is_e164(to):
            raise SpecViolation(f"The 'To' number {to} is not a valid phone number.", code=21211)
        if not is_e164(sender):
            raise SpecViolation(
                f"The 'From' number {sender} is not a valid phone number.", code=21212
            )
        if self.fake.number(sender) is None:
            raise SpecViolation(
                f"The source phone number provided, {sender}, is not yet verified for your "
                "account. You may only make calls from phone numbers that you've verified or "
                "purchased from Twilio.",
                code=21210,
            )
        self._check_refused(to)
        call = FakeCall(new_sid("CA"), dict(values))
        with self.fake.lock:
            self.fake.calls.append(call)
            script = self.fake.callees.get(to, CalleeScript())
        self.fake.background.spawn(self.fake._run_call(call, script), f"call {call.sid}")
        return self._call_resource(call)

    def _call_resource(self, call: FakeCall) -> dict[str, Any]:
        with self.fake.lock:
            number = self.fake.number(call.to if call.direction == "inbound" else call.from_)
            return {
                "sid": call.sid,
                "account_sid": self.fake.account_sid,
                "answered_by": call.answered_by,
                "api_version": API_VERSION,
                "caller_name": None,
                "date_created": rfc2822(call.created),
                "date_updated": rfc2822(call.ended_at or call.answered_at or call.created),
                "direction": call.direction,
                "duration": str(call.duration) if call.done else None,
                "end_time": rfc2822(call.ended_at) if call.ended_at else None,
                "forwarded_from": None,
                "from": call.from_,
                "from_formatted": call.from_,
                "group_sid": None,
                "parent_call_sid": None,
                "phone_number_sid": number.sid if number else None,
                "price": None,
                "price_unit": "USD",
                "queue_time": "0",
                "start_time": rfc2822(call.answered_at) if call.answered_at else None,
                "status": call.status,
                "subresource_uris": {},
                "to": call.to,
                "to_formatted": call.to,
                "trunk_sid": None,
                "uri": f"/{API_VERSION}/Accounts/{self.fake.account_sid}/Calls/{call.sid}.json",
            }

    def _list_calls(self, values: Mapping[str, Any]) -> dict[str, Any]:
        with self.fake.lock:
            found = [
                c
                for c in reversed(self.fake.calls)
                if values.get("To", c.to) == c.to
                and values.get("From", c.from_) == c.from_
                and values.get("Status", c.status) == c.status
            ]
        return self._page("calls", [self._call_resource(c) for c in found], "Calls.json", values)

    def _update_call(self, call: FakeCall, values: Mapping[str, Any]) -> dict[str, Any]:
        status, url, twiml = values.get("Status"), values.get("Url"), values.get("Twiml")
        if url and twiml:
            raise SpecViolation("Twiml and Url are mutually exclusive", code=21200)
        with self.fake.lock:
            for name in ("StatusCallback", "StatusCallbackMethod", "TimeLimit"):
                if name in values:
                    call.params[name] = values[name]
            if status == "completed" or (
                status == "canceled" and call.status in ("queued", "ringing")
            ):
                if not call.done:
                    call.hang_up_requested = True
                    call.ended_by = call.ended_by or "api"
            elif url or twiml:
                if call.done or call.status != "in-progress":
                    raise SpecViolation(
                        "Call is not in-progress. Cannot redirect this call.", code=21220
                    )
                if url:
                    call.redirect = ("url", str(url), str(values.get("Method", "POST")))
                else:
                    call.redirect = ("twiml", str(twiml), "")
        return self._call_resource(call)
