"""The contract fake itself: it accepts what Twilio's official Python client sends,
answers in the shapes the published description gives, refuses what Twilio refuses
(with Twilio's error codes), signs what it sends as Twilio does (checked by the
official validator at a small Starlette app on loopback), and runs a call's TwiML with
a scripted callee."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx
import jsonschema
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from twilio.base.exceptions import TwilioRestException
from twilio.request_validator import RequestValidator
from twilio.rest import Client

from humanwire.testing.twilio import (
    CalleeScript,
    FakeTwilio,
    TwilioFakeServer,
    load_spec,
    twilio_fake,
)

OPERATOR = "+14155550142"
HUMAN = "+12025550100"
OTHER = "+13125550177"
TRANSFER = "+14155550111"
MESSAGE = {"To": HUMAN, "From": OPERATOR, "Body": "x"}
ACCOUNT_PATH = "/2010-04-01/Accounts/{AccountSid}"


# -- the service's side: a Starlette app on loopback ------------------------------------------
@dataclass
class Hit:
    method: str
    path: str
    url: str
    params: dict[str, str]
    signed: bool


class Phone:
    """Plays the service: records every request the fake makes (its signature checked by
    ``twilio``'s ``RequestValidator`` over the exact URL; a bad one is answered 403) and
    answers the TwiML ``routes`` give for a path."""

    def __init__(self, auth_token: str) -> None:
        self.validator = RequestValidator(auth_token)
        self.hits: list[Hit] = []
        self.routes: dict[str, Callable[[dict[str, str]], str]] = {}
        self.fail: dict[str, int] = {}
        self.base_url = ""

    def reset(self) -> None:
        self.hits, self.routes, self.fail = [], {}, {}

    async def handle(self, request: Request) -> Response:
        url = str(request.url)
        signature = request.headers.get("X-Twilio-Signature", "")
        if request.method == "POST":
            params = dict(parse_qsl((await request.body()).decode(), keep_blank_values=True))
            signed = self.validator.validate(url, params, signature)
        else:
            params = dict(request.query_params)
            signed = self.validator.validate(url, {}, signature)
        self.hits.append(Hit(request.method, request.url.path, url, params, signed))
        if not signed:
            return Response("bad signature", status_code=403)
        if request.url.path in self.fail:
            return Response(status_code=self.fail[request.url.path])
        route = self.routes.get(request.url.path)
        if route is None:
            return Response(status_code=204)
        return Response(route(params), media_type="application/xml")

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def to(self, path: str) -> list[Hit]:
        return [h for h in self.hits if h.path == path]


@contextmanager
def serve(phone: Phone) -> Iterator[Phone]:
    app = Starlette(routes=[Route("/{path:path}", phone.handle, methods=["GET", "POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    phone.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.005)
    try:
        yield phone
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass
class Twilio:
    server: TwilioFakeServer
    fake: FakeTwilio
    client: Client
    phone: Phone

    def post(self, path: str, data: Any, **options: Any) -> httpx.Response:
        return httpx.post(
            f"{self.server.base_url}/2010-04-01/Accounts/{self.fake.account_sid}{path}",
            auth=options.pop("auth", (self.fake.account_sid, self.fake.auth_token)),
            data=data,
            **options,
        )

    def get(self, path: str, **params: Any) -> httpx.Response:
        return httpx.get(
            f"{self.server.base_url}/2010-04-01/Accounts/{self.fake.account_sid}{path}",
            auth=(self.fake.account_sid, self.fake.auth_token),
            params=params,
        )


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[TwilioFakeServer, Phone]]:
    """One fake and one phone for the module (reset for each test): fast."""
    fake = FakeTwilio()
    with TwilioFakeServer(fake) as server, serve(Phone(fake.auth_token)) as phone:
        yield server, phone


@pytest.fixture
def twilio(served: tuple[TwilioFakeServer, Phone]) -> Iterator[Twilio]:
    server, phone = served
    fake = server.fake
    fake.reset()
    fake.auto_status = True
    phone.reset()
    fake.add_number(OPERATOR)
    client = Client(fake.account_sid, fake.auth_token)
    client.api.base_url = server.base_url
    yield Twilio(server, fake, client, phone)
    with contextlib.suppress(TimeoutError):
        fake.wait_idle(2)
    fake.reset()


def check(answer: httpx.Response) -> None:
    """Holds an answer to the description's response schema for its operation."""
    spec = load_spec()
    operation = spec.operation(answer.request.method, answer.request.url.path)
    spec.check_response(operation, answer.status_code, answer.json())


# -- the published description ------------------------------------------------------------------
def test_the_description_and_its_licence_ship_inside_the_package() -> None:
    files = importlib.resources.files("humanwire.testing.twilio")
    assert "paths" in files.joinpath("twilio_api_v2010.subset.json").read_text()
    assert "MIT" in files.joinpath("twilio-oai.LICENSE").read_text()
    spec = load_spec()
    operation = spec.operation("POST", f"/2010-04-01/Accounts/AC{'0' * 32}/Messages.json")
    assert operation.key == "POST /Messages.json"
    assert operation.content_types == ("application/x-www-form-urlencoded",)


def test_the_response_check_catches_what_the_description_forbids() -> None:
    spec = load_spec()
    operation = spec.operation(
        "GET", f"/2010-04-01/Accounts/AC{'0' * 32}/Messages/SM{'0' * 32}.json"
    )
    good = {
        "sid": "SM" + "0" * 32,
        "status": "sent",
        "date_created": "Tue, 31 Aug 2010 20:36:28 +0000",
    }
    spec.check_response(operation, 200, good)
    for bad in (
        {**good, "date_created": "2010-08-31T20:36:28Z"},  # not RFC 2822
        {**good, "status": "posted"},  # not in the enum
        {**good, "sid": "CA" + "0" * 32},  # wrong prefix
    ):
        with pytest.raises(jsonschema.ValidationError):
            spec.check_response(operation, 200, bad)


# -- what the official client sends is taken ---------------------------------------------------
def test_the_official_client_sends_and_fetches_a_message(twilio: Twilio) -> None:
    message = twilio.client.messages.create(to=HUMAN, from_=OPERATOR, body="Hello")
    assert message.sid.startswith("SM") and message.status == "queued"
    assert message.to == HUMAN and message.from_ == OPERATOR and message.num_segments == "1"
    [sent] = twilio.fake.messages
    assert sent.params == {"To": HUMAN, "From": OPERATOR, "Body": "Hello"}
    twilio.fake.wait_for(lambda: sent.status == "delivered")
    fetched = twilio.client.messages(message.sid).fetch()
    assert fetched.status == "delivered" and fetched.date_sent is not None
    listed = twilio.client.messages.list(to=HUMAN)
    assert [m.sid for m in listed] == [message.sid]
    assert [r.method for r in twilio.fake.requests] == ["POST", "GET", "GET"]
    assert twilio.fake.violations == []


def test_media_urls_go_as_repeated_keys_and_whatsapp_as_prefixed_addresses(
    twilio: Twilio,
) -> None:
    twilio.client.messages.create(
        to=f"whatsapp:{HUMAN}",
        from_=f"whatsapp:{OPERATOR}",
        media_url=["https://media.example/a.png", "https://media.example/b.png"],
    )
    [sent] = twilio.fake.messages
    assert sent.media_urls == ["https://media.example/a.png", "https://media.example/b.png"]
    assert sent.channel == "whatsapp" and sent.sid.startswith("MM")
    assert twilio.fake.sent_to(HUMAN) == [sent]
    assert twilio.fake.violations == []


def test_its_answers_follow_the_published_description(twilio: Twilio) -> None:
    fake = twilio.fake
    fake.add_available("+14155550177")
    created = twilio.post("/Messages.json", {**MESSAGE, "StatusCallback": twilio.phone.url("/s")})
    assert created.status_code == 201
    sid = created.json()["sid"]
    fake.wait_for(lambda: fake.message(sid).status == "delivered")
    call = twilio.post("/Calls.json", {"To": HUMAN, "From": OPERATOR, "Twiml": "<Response/>"})
    call_sid = call.json()["sid"]
    fake.wait_idle()
    bought = twilio.post("/IncomingPhoneNumbers.json", {"AreaCode": "415"})
    number = bought.json()["sid"]
    path = f"/IncomingPhoneNumbers/{number}.json"
    answers = [
        created,
        twilio.get(f"/Messages/{sid}.json"),
        twilio.get("/Messages.json"),
        call,
        twilio.get(f"/Calls/{call_sid}.json"),
        twilio.post(f"/Calls/{call_sid}.json", {"Status": "completed"}),
        twilio.get("/Calls.json"),
        twilio.get("/AvailablePhoneNumbers/US/Local.json", AreaCode=415),
        bought,
        twilio.post(path, {"SmsUrl": "https://hw.example.com/sms", "SmsMethod": "GET"}),
        twilio.get(path),
        twilio.get("/IncomingPhoneNumbers.json", PhoneNumber="+14155550177"),
    ]
    for answer in answers:
        check(answer)
    assert [a.status_code for a in answers] == [201, 200, 200, 201, 200, 200, 200, 200, 201] + [
        200
    ] * 3
    assert answers[1].json()["status"] == "delivered"
    assert answers[4].json()["status"] == "completed"
    assert [n["sid"] for n in answers[-1].json()["incoming_phone_numbers"]] == [number]
    assert answers[-2].json()["sms_method"] == "GET"
    released = httpx.delete(
        f"{twilio.server.base_url}/2010-04-01/Accounts/{fake.account_sid}{path}",
        auth=(fake.account_sid, fake.auth_token),
    )
    assert released.status_code == 204 and released.content == b""
    assert twilio.get(path).json()["code"] == 20404
    assert [v.code for v in fake.violations] == [20404]


def test_numbers_through_the_official_client(twilio: Twilio) -> None:
    fake = twilio.fake
    fake.add_available("+14155550177", locality="San Francisco", region="CA")
    fake.add_available("+14155550188")
    fake.add_available("+12125550199")
    offers = twilio.client.available_phone_numbers("US").local.list(area_code=415)
    assert sorted(o.phone_number for o in offers) == ["+14155550177", "+14155550188"]
    found = twilio.client.available_phone_numbers("US").local.list(contains="555017*")
    assert [o.phone_number for o in found] == ["+14155550177"]
    assert twilio.client.available_phone_numbers("GB").local.list() == []
    bought = twilio.client.incoming_phone_numbers.create(
        phone_number="+14155550177", sms_url="https://hw.example.com/sms"
    )
    number = fake.number("+14155550177")
    assert number is not None and number.bought and number.sms_url == "https://hw.example.com/sms"
    twilio.client.incoming_phone_numbers(bought.sid).update(
        voice_url="https://hw.example.com/voice", voice_method="GET"
    )
    assert (number.voice_url, number.voice_method) == ("https://hw.example.com/voice", "GET")
    assert number.params["VoiceMethod"] == "GET"
    [listed] = twilio.client.incoming_phone_numbers.list(phone_number="+14155550177")
    assert listed.sid == bought.sid and listed.voice_url == "https://hw.example.com/voice"
    twilio.client.incoming_phone_numbers(bought.sid).delete()
    assert fake.number("+14155550177") is None and fake.numbers[bought.sid].released
    with pytest.raises(TwilioRestException) as sold:
        twilio.client.incoming_phone_numbers.create(phone_number="+14155550177")
    assert sold.value.code == 21422
    with pytest.raises(TwilioRestException) as nothing:
        twilio.client.incoming_phone_numbers.create(area_code="303")
    assert nothing.value.code == 21452
    assert [v.code for v in fake.violations] == [21422, 21452]


# -- what Twilio refuses is refused ----------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "params", "code"),
    [
        ("/Messages.json", {"To": "+1555", "From": OPERATOR, "Body": "x"}, 21211),
        ("/Messages.json", {"To": HUMAN, "From": "+14155550199", "Body": "x"}, 21606),
        ("/Messages.json", {"To": HUMAN, "From": OPERATOR}, 21602),
        ("/Messages.json", {"To": HUMAN, "Body": "x"}, 21603),
        ("/Messages.json", {"From": OPERATOR, "Body": "x"}, 21604),
        ("/Messages.json", {"To": f"whatsapp:{HUMAN}", "From": OPERATOR, "Body": "x"}, 21910),
        (
            "/Messages.json",
            {"To": f"whatsapp:{HUMAN}", "From": "whatsapp:+14155550199", "Body": "x"},
            63007,
        ),
        ("/Messages.json", {**MESSAGE, "Body": "x" * 1601}, 21617),
        ("/Messages.json", {**MESSAGE, "ContentVariables": '{"1": "a"}'}, 21656),
        ("/Messages.json", {**MESSAGE, "StatusCallback": "https://my_host.example/s"}, 21609),
        ("/Calls.json", {"To": HUMAN, "From": OPERATOR}, 21205),
        ("/Calls.json", {"From": OPERATOR, "Url": "https://hw.example/v"}, 21201),
        ("/Calls.json", {"To": HUMAN, "Url": "https://hw.example/v"}, 21213),
        (
            "/Calls.json",
            {"To": HUMAN, "From": "+14155550199", "Url": "https://hw.example/v"},
            21210,
        ),
        ("/Calls.json", {"To": HUMAN, "From": OPERATOR, "Url": "/relative"}, 21205),
        ("/Calls.json", {"To": HUMAN, "From": OPERATOR, "Twiml": "<Say>hi</Say>"}, 21200),
        (
            "/Calls.json",
            {"To": HUMAN, "From": OPERATOR, "Twiml": "<Response/>", "Method": "PUT"},
            21209,
        ),
        (
            "/Calls.json",
            {"To": HUMAN, "From": OPERATOR, "Twiml": "<Response/>", "StatusCallbackEvent": "done"},
            21626,
        ),
        ("/IncomingPhoneNumbers.json", {"SmsUrl": "https://hw.example/sms"}, 21421),
    ],
)
def test_requests_twilio_refuses_are_refused_with_its_codes(
    twilio: Twilio, path: str, params: dict[str, str], code: int
) -> None:
    answer = twilio.post(path, params)
    assert answer.status_code == 400
    assert answer.json() == {
        "code": code,
        "message": answer.json()["message"],
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": 400,
    }
    [violation] = twilio.fake.violations
    assert (violation.code, violation.path.endswith(path)) == (code, True)
    assert violation.params == list(params.items())
    assert twilio.fake.messages == [] and twilio.fake.calls == []


def test_the_official_client_sees_twilios_errors(twilio: Twilio) -> None:
    with pytest.raises(TwilioRestException) as caught:
        twilio.client.messages.create(to="+1555", from_=OPERATOR, body="x")
    assert (caught.value.status, caught.value.code) == (400, 21211)
    assert caught.value.msg.endswith("The 'To' number +1555 is not a valid phone number.")
    assert caught.value.method == "POST" and caught.value.uri.endswith("/Messages.json")


def test_unknown_parameters_wrong_types_and_wrong_encodings_are_refused(twilio: Twilio) -> None:
    unknown = twilio.post("/Messages.json", {**MESSAGE, "Colour": "red"})
    assert unknown.json()["code"] == 20001 and "Colour" in unknown.json()["message"]
    typed = twilio.post(
        "/Calls.json",
        {"To": HUMAN, "From": OPERATOR, "Url": "https://a.example/t", "TimeLimit": "soon"},
    )
    assert typed.status_code == 400 and "TimeLimit" in typed.json()["message"]
    boolean = twilio.post("/Messages.json", {**MESSAGE, "SmartEncoded": "yes"})
    assert "SmartEncoded" in boolean.json()["message"]
    enum = twilio.post("/Messages.json", {**MESSAGE, "ContentRetention": "forever"})
    assert "ContentRetention" in enum.json()["message"]
    pattern = twilio.post("/Messages.json", {**MESSAGE, "ContentSid": "HX123"})
    assert "ContentSid" in pattern.json()["message"]
    twice = twilio.post(
        "/Messages.json",
        None,
        content=urlencode([*MESSAGE.items(), ("Body", "y")]),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert "more than once" in twice.json()["message"]
    as_json = twilio.post("/Messages.json", None, json=MESSAGE)
    assert "x-www-form-urlencoded" in as_json.json()["message"]
    assert len(twilio.fake.violations) == 7
    assert twilio.fake.messages == []
    # …and the right forms of the same parameters are taken:
    good = twilio.post(
        "/Messages.json", {**MESSAGE, "SmartEncoded": "true", "ContentRetention": "discard"}
    )
    assert good.status_code == 201
    assert twilio.fake.messages[0].params["SmartEncoded"] is True
    assert len(twilio.fake.violations) == 7


def test_credentials_paths_and_methods_are_checked(twilio: Twilio) -> None:
    wrong = Client(twilio.fake.account_sid, "wrong-token")
    wrong.api.base_url = twilio.server.base_url
    with pytest.raises(TwilioRestException) as caught:
        wrong.messages.create(to=HUMAN, from_=OPERATOR, body="x")
    assert (caught.value.status, caught.value.code) == (401, 20003)
    other = "AC" + "1" * 32
    foreign = httpx.post(
        f"{twilio.server.base_url}/2010-04-01/Accounts/{other}/Messages.json",
        auth=(twilio.fake.account_sid, twilio.fake.auth_token),
        data=MESSAGE,
    )
    assert (foreign.status_code, foreign.json()["code"]) == (401, 20003)
    unknown = twilio.get("/Faxes.json")
    assert (unknown.status_code, unknown.json()["code"]) == (404, 20404)
    put = httpx.put(
        f"{twilio.server.base_url}/2010-04-01/Accounts/{twilio.fake.account_sid}/Messages.json",
        auth=(twilio.fake.account_sid, twilio.fake.auth_token),
    )
    assert (put.status_code, put.json()["code"]) == (405, 20004)
    assert [v.status for v in twilio.fake.violations] == [401, 401, 404, 405]
    assert twilio.fake.messages == []


# -- failures a test asks for ------------------------------------------------------------------
def test_injected_failures_are_answered_but_are_not_violations(twilio: Twilio) -> None:
    fake = twilio.fake
    fake.fail_next(503, times=2, retry_after=3)
    for _ in range(2):
        busy = twilio.post("/Messages.json", MESSAGE)
        assert (busy.status_code, busy.json()["code"]) == (503, 20500)
        assert busy.headers["Retry-After"] == "3"
    assert twilio.post("/Messages.json", MESSAGE).status_code == 201
    fake.fail_next(429, match="/Calls")
    assert twilio.post("/Messages.json", MESSAGE).status_code == 201
    limited = twilio.post("/Calls.json", {"To": HUMAN, "From": OPERATOR, "Twiml": "<Response/>"})
    assert (limited.status_code, limited.json()["code"]) == (429, 20429)
    fake.refuse(OTHER, code=21614)
    with pytest.raises(TwilioRestException) as refused:
        twilio.client.messages.create(to=OTHER, from_=OPERATOR, body="x")
    assert (refused.value.status, refused.value.code) == (400, 21614)
    assert "mobile" in refused.value.msg
    assert fake.violations == []
    assert len(fake.messages) == 2 and fake.sent_to(OTHER) == []


def test_a_slow_twilio_answers_late(twilio: Twilio) -> None:
    twilio.fake.delay(0.4)
    started = time.monotonic()
    assert twilio.post("/Messages.json", MESSAGE).status_code == 201
    assert time.monotonic() - started >= 0.4
    twilio.fake.delay(0)
    started = time.monotonic()
    twilio.post("/Messages.json", MESSAGE)
    assert time.monotonic() - started < 0.4


# -- status callbacks --------------------------------------------------------------------------
def test_status_callbacks_are_signed_as_twilio_signs_them(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    callback = phone.url("/status?interaction=i_1")
    message = twilio.client.messages.create(
        to=HUMAN, from_=OPERATOR, body="x", status_callback=callback
    )
    fake.wait_for(lambda: len(phone.hits) == 2)
    assert [h.url for h in phone.hits] == [callback, callback]
    assert all(h.signed for h in phone.hits)
    assert [h.params["MessageStatus"] for h in phone.hits] == ["sent", "delivered"]
    first = phone.hits[0].params
    assert first["SmsStatus"] == "sent" and first["MessageSid"] == message.sid
    assert (first["AccountSid"], first["From"], first["To"]) == (fake.account_sid, OPERATOR, HUMAN)
    assert "ErrorCode" not in first
    # Recorded once the callback has been answered: the phone can see it a moment before.
    fake.wait_for(lambda: fake.message(message.sid).statuses == ["sent", "delivered"])
    # the signature covers every parameter: changed ones do not validate
    validator = RequestValidator(fake.auth_token)
    assert not validator.validate(callback, {**first, "MessageStatus": "read"}, "x")
    assert not validator.validate(
        callback,
        {**first, "MessageStatus": "read"},
        validator.compute_signature(callback, first),
    )


def test_a_failed_delivery_is_reported_with_its_error_code(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    fake.fail_delivery(HUMAN, "undelivered", 30003)
    message = twilio.client.messages.create(
        to=HUMAN, from_=OPERATOR, body="x", status_callback=phone.url("/status")
    )
    fake.wait_for(lambda: len(phone.hits) == 2)
    assert [(h.params["MessageStatus"], h.params.get("ErrorCode")) for h in phone.hits] == [
        ("sent", None),
        ("undelivered", "30003"),
    ]
    fetched = twilio.client.messages(message.sid).fetch()
    assert (fetched.status, fetched.error_code) == ("undelivered", 30003)
    with pytest.raises(ValueError):
        fake.fail_delivery(HUMAN, "lost")


def test_statuses_by_hand_when_auto_status_is_off(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    fake.auto_status = False
    message = twilio.client.messages.create(
        to=HUMAN, from_=OPERATOR, body="x", status_callback=phone.url("/status")
    )
    time.sleep(0.1)
    assert phone.hits == [] and fake.message(message.sid).status == "queued"
    answer = fake.post_message_status(message.sid, "failed", error_code=30006)
    assert answer.status_code == 204
    [hit] = phone.hits
    assert hit.signed and (hit.params["MessageStatus"], hit.params["ErrorCode"]) == (
        "failed",
        "30006",
    )
    assert fake.message(message.sid).status == "failed"


# -- inbound messages -------------------------------------------------------------------------
def test_an_inbound_text_is_posted_signed_to_the_numbers_sms_url(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    fake.number(OPERATOR).sms_url = phone.url("/sms?x=1")  # type: ignore[union-attr]
    answer = fake.send_inbound(
        HUMAN, OPERATOR, "yes please", media_urls=["https://m.example/p.png"]
    )
    assert answer.status_code == 204
    [hit] = phone.hits
    assert hit.signed and hit.method == "POST" and hit.url == phone.url("/sms?x=1")
    params = hit.params
    assert (params["From"], params["To"], params["Body"]) == (HUMAN, OPERATOR, "yes please")
    assert params["MessageSid"] == params["SmsSid"] and params["MessageSid"].startswith("MM")
    assert params["AccountSid"] == fake.account_sid
    assert (params["NumMedia"], params["MediaUrl0"], params["MediaContentType0"]) == (
        "1",
        "https://m.example/p.png",
        "image/png",
    )
    again = fake.send_inbound(HUMAN, OPERATOR, "yes please", message_sid=params["MessageSid"])
    assert again.status_code == 204
    assert phone.hits[1].params["MessageSid"] == params["MessageSid"]


def test_an_inbound_whatsapp_message_carries_whatsapp_addresses(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    fake.send_inbound(HUMAN, OPERATOR, "hi", channel="whatsapp", url=phone.url("/wa"))
    [hit] = phone.hits
    assert hit.signed
    assert (hit.params["From"], hit.params["To"]) == (f"whatsapp:{HUMAN}", f"whatsapp:{OPERATOR}")
    assert hit.params["WaId"] == HUMAN[1:] and hit.params["ProfileName"] == "Test Human"
    assert hit.params["NumMedia"] == "0" and "MediaUrl0" not in hit.params


def test_sms_method_get_sends_the_parameters_in_the_signed_query(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    sid = fake.add_number(OTHER)
    twilio.client.incoming_phone_numbers(sid).update(sms_url=phone.url("/sms"), sms_method="GET")
    fake.send_inbound(HUMAN, OTHER, "by GET")
    [hit] = phone.hits
    assert hit.method == "GET" and hit.signed and hit.params["Body"] == "by GET"


def test_bad_signatures_can_be_sent_on_purpose(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    params = {"MessageSid": "SM" + "a" * 32, "From": HUMAN, "To": OPERATOR, "Body": "x"}
    assert fake.post_signed(phone.url("/sms"), params).status_code == 204
    assert fake.post_signed(phone.url("/sms"), params, signature="bad").status_code == 403
    assert [h.signed for h in phone.hits] == [True, False]
    with pytest.raises(RuntimeError, match="SmsUrl"):
        fake.send_inbound(HUMAN, "+14155550100", "nobody's number")


async def test_the_async_twins_work_from_another_loop(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    answer = await fake.asend_inbound(HUMAN, OPERATOR, "async", url=phone.url("/sms"))
    assert answer.status_code == 204 and phone.hits[0].params["Body"] == "async"
    signed = await fake.apost_signed(phone.url("/x"), {"A": "1"}, signature="bad")
    assert signed.status_code == 403
    phone.routes["/voice"] = lambda p: "<Response><Say>Hello</Say></Response>"
    fake.number(OPERATOR).voice_url = phone.url("/voice")  # type: ignore[union-attr]
    call = await fake.ainbound_call(HUMAN, OPERATOR, CalleeScript())
    assert call.said == ["Hello"] and call.done
    await fake.await_idle()


def test_a_blocking_helper_on_the_fakes_own_loop_refuses_instead_of_hanging(
    twilio: Twilio,
) -> None:
    fake = twilio.fake

    async def inside() -> None:
        fake.post_signed(twilio.phone.url("/x"), {"A": "1"})

    assert fake.loop is not None
    with pytest.raises(RuntimeError, match="async twin"):
        asyncio.run_coroutine_threadsafe(inside(), fake.loop).result(5)
    assert twilio.phone.hits == []


# -- calls: the TwiML loop -------------------------------------------------------------------
def converse(phone: Phone) -> None:
    """A tiny voice app: asks, answers what it heard, transfers on request."""
    ask = (
        '<Response><Gather input="speech" action="/turn" method="POST">'
        "<Say>Can you make Friday?</Say></Gather>"
        "<Redirect>/again</Redirect></Response>"
    )

    def turn(params: dict[str, str]) -> str:
        heard = params.get("SpeechResult", "")
        if "person" in heard:
            return f"<Response><Say>Connecting you</Say><Dial>{TRANSFER}</Dial></Response>"
        return f"<Response><Say>You said {heard}</Say><Hangup/></Response>"

    phone.routes["/voice"] = lambda p: ask
    phone.routes["/turn"] = turn
    phone.routes["/again"] = lambda p: (
        '<Response><Gather input="speech" action="turn"><Say>Sorry?</Say></Gather>'
        "<Say>Goodbye</Say></Response>"
    )


def place(twilio: Twilio, **options: Any) -> str:
    call = twilio.client.calls.create(
        to=HUMAN,
        from_=OPERATOR,
        url=twilio.phone.url("/voice"),
        status_callback=twilio.phone.url("/call-status"),
        **options,
    )
    assert call.sid.startswith("CA") and call.status == "queued"
    return str(call.sid)


def test_a_call_runs_the_services_twiml_with_the_scripted_callee(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    fake.callee(HUMAN, CalleeScript(says=["Friday works"]))
    sid = place(twilio, machine_detection="Enable", status_callback_event=["completed"])
    fake.wait_idle()
    call = fake.call(sid)
    assert call.said == ["Can you make Friday?", "You said Friday works"]
    assert call.heard == ["Friday works"]
    assert (call.status, call.answered_by, call.ended_by) == ("completed", "human", "service")
    assert call.statuses == ["ringing", "in-progress", "completed"]
    assert [h.path for h in phone.hits] == ["/voice", "/turn", "/call-status"]
    assert all(h.signed for h in phone.hits)
    first, turn, final = (h.params for h in phone.hits)
    assert (first["CallSid"], first["CallStatus"], first["Direction"]) == (
        sid,
        "in-progress",
        "outbound-api",
    )
    assert first["AnsweredBy"] == "human" and (first["From"], first["To"]) == (OPERATOR, HUMAN)
    assert (turn["SpeechResult"], turn["Confidence"]) == ("Friday works", "0.92")
    assert final["CallStatus"] == "completed" and final["CallDuration"] == "0"
    assert final["CallbackSource"] == "call-progress-events"
    assert fake.errors == [] and fake.violations == []


def test_silence_falls_through_to_the_verbs_after_the_gather(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    fake.callee(HUMAN, CalleeScript(says=[None, None]))
    sid = place(twilio)
    fake.wait_idle()
    call = fake.call(sid)
    assert call.heard == [None, None]
    assert call.said == ["Can you make Friday?", "Sorry?", "Goodbye"]
    assert [h.path for h in phone.hits] == ["/voice", "/again", "/call-status"]
    assert "SpeechResult" not in phone.hits[1].params
    assert call.status == "completed"


def test_a_gather_asks_its_action_on_empty_results_when_told_to(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    phone.routes["/voice"] = lambda p: (
        '<Response><Gather input="speech dtmf" action="/empty" actionOnEmptyResult="true">'
        "<Say>Press or say</Say></Gather><Say>not reached</Say></Response>"
    )
    phone.routes["/empty"] = lambda p: "<Response><Hangup/></Response>"
    fake.callee(HUMAN, CalleeScript(says=[None]))
    sid = place(twilio)
    fake.wait_idle()
    assert fake.call(sid).said == ["Press or say"]
    assert phone.to("/empty")[0].params.get("SpeechResult") is None


def test_a_transfer_dials_the_number(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    fake.callee(HUMAN, CalleeScript(says=["a person please"]))
    sid = place(twilio)
    fake.wait_idle()
    call = fake.call(sid)
    assert call.transferred_to == TRANSFER
    assert call.said == ["Can you make Friday?", "Connecting you"]
    assert call.status == "completed"


def test_an_answering_machine_hears_the_message_and_answers_nothing(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    fake.callee(HUMAN, CalleeScript(answer="machine", says=["never used"]))
    sid = place(twilio, machine_detection="DetectMessageEnd")
    fake.wait_idle()
    call = fake.call(sid)
    assert call.answered_by == "machine_end_beep"
    assert phone.hits[0].params["AnsweredBy"] == "machine_end_beep"
    assert call.heard == [] and call.said == ["Can you make Friday?", "Sorry?", "Goodbye"]


def test_without_machine_detection_no_answered_by_is_sent(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    fake.callee(HUMAN, CalleeScript(says=["Friday works"]))
    sid = place(twilio)
    fake.wait_idle()
    assert fake.call(sid).answered_by is None
    assert all("AnsweredBy" not in h.params for h in phone.hits)


@pytest.mark.parametrize("answer", ["no-answer", "busy", "failed"])
def test_unanswered_calls_report_their_status_only(twilio: Twilio, answer: str) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    fake.callee(HUMAN, CalleeScript(answer=answer))  # type: ignore[arg-type]
    sid = place(twilio, status_callback_event=["initiated", "ringing", "answered", "completed"])
    fake.wait_idle()
    assert [h.path for h in phone.hits] == ["/call-status"] * 3
    assert [h.params["CallStatus"] for h in phone.hits] == ["initiated", "ringing", answer]
    assert [h.params["SequenceNumber"] for h in phone.hits] == ["0", "1", "2"]
    assert fake.call(sid).status == answer and fake.call(sid).said == []
    assert twilio.client.calls(sid).fetch().status == answer


def test_progress_events_of_an_answered_call(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    fake.callee(HUMAN, CalleeScript(says=["Friday works"]))
    place(twilio, status_callback_event=["ringing", "answered", "completed"])
    fake.wait_idle()
    statuses = [h.params["CallStatus"] for h in phone.to("/call-status")]
    assert statuses == ["ringing", "in-progress", "completed"]


def test_the_service_ends_a_call_mid_conversation(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    phone.routes["/turn"] = lambda p: phone.routes["/voice"](p)  # asks again and again
    fake.callee(HUMAN, CalleeScript(says=["hmm"] * 100, seconds_per_turn=0.1))
    sid = place(twilio)
    fake.wait_for(lambda: len(fake.call(sid).heard) >= 2)
    twilio.client.calls(sid).update(status="completed")
    fake.wait_idle()
    call = fake.call(sid)
    assert (call.status, call.ended_by, call.hang_up_requested) == ("completed", "api", True)
    assert len(call.heard) < 10
    assert phone.hits[-1].params["CallStatus"] == "completed"


def test_a_rest_redirect_replaces_the_calls_twiml(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    phone.routes["/turn"] = lambda p: phone.routes["/voice"](p)
    fake.callee(HUMAN, CalleeScript(says=["hmm"] * 100, seconds_per_turn=0.1))
    sid = place(twilio)
    fake.wait_for(lambda: len(fake.call(sid).heard) >= 1)
    twilio.client.calls(sid).update(twiml="<Response><Say>Time is up</Say></Response>")
    fake.wait_idle()
    call = fake.call(sid)
    assert call.said[-1] == "Time is up" and call.status == "completed"
    with pytest.raises(TwilioRestException) as over:
        twilio.client.calls(sid).update(url=phone.url("/voice"))
    assert over.value.code == 21220


def test_a_call_canceled_while_ringing(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    fake.callee(HUMAN, CalleeScript(says=["hi"], ring_seconds=5))
    sid = place(twilio)
    fake.wait_for(lambda: fake.call(sid).status == "ringing")
    twilio.client.calls(sid).update(status="canceled")
    fake.wait_idle()
    assert fake.call(sid).status == "canceled"
    assert [h.path for h in phone.hits] == ["/call-status"]
    assert phone.hits[0].params["CallStatus"] == "canceled"


def test_the_callee_hangs_up(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    phone.routes["/turn"] = lambda p: phone.routes["/voice"](p)
    fake.callee(HUMAN, CalleeScript(says=["hmm"] * 100, seconds_per_turn=0.1))
    sid = place(twilio)
    fake.wait_for(lambda: len(fake.call(sid).heard) >= 1)
    fake.hang_up(sid)
    fake.wait_idle()
    call = fake.call(sid)
    assert (call.status, call.ended_by) == ("completed", "callee")
    scripted = CalleeScript(says=["one", "two", "three"], hang_up_after=2)
    fake.callee(HUMAN, scripted)
    second = place(twilio)
    fake.wait_idle()
    assert fake.call(second).heard == ["one", "two"] and fake.call(second).ended_by == "callee"


def test_inline_twiml_runs_without_a_url(twilio: Twilio) -> None:
    fake = twilio.fake
    call = twilio.client.calls.create(
        to=HUMAN,
        from_=OPERATOR,
        twiml="<Response><Say>Your code is 1234</Say><Pause/><Play>https://a.example/x.mp3</Play></Response>",
    )
    fake.wait_idle()
    record = fake.call(call.sid)
    assert record.said == ["Your code is 1234"] and record.played == ["https://a.example/x.mp3"]
    assert record.status == "completed" and twilio.phone.hits == []


def test_a_failing_twiml_url_ends_the_call_with_an_error(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    phone.fail["/voice"] = 500
    phone.routes["/fallback"] = lambda p: "<Response><Say>Fallback</Say></Response>"
    sid = place(twilio)
    fake.wait_idle()
    call = fake.call(sid)
    assert call.status == "completed" and call.said == []
    assert "answered 500" in call.errors[0] and fake.errors
    second = place(twilio, fallback_url=phone.url("/fallback"))
    fake.wait_idle()
    assert fake.call(second).said == ["Fallback"]
    assert phone.to("/fallback")[0].params["ErrorCode"] == "11200"


def test_an_inbound_call_runs_against_the_numbers_voice_url(twilio: Twilio) -> None:
    fake, phone = twilio.fake, twilio.phone
    converse(phone)
    sid = fake.add_number(OTHER)
    twilio.client.incoming_phone_numbers(sid).update(
        voice_url=phone.url("/voice"), status_callback=phone.url("/call-status")
    )
    call = fake.inbound_call(HUMAN, OTHER, CalleeScript(says=["Friday works"]))
    assert call.done and call.direction == "inbound" and call.heard == ["Friday works"]
    first = phone.hits[0].params
    assert (first["Direction"], first["CallStatus"], first["From"], first["To"]) == (
        "inbound",
        "ringing",
        HUMAN,
        OTHER,
    )
    assert phone.hits[1].params["CallStatus"] == "in-progress"
    assert phone.hits[-1].params["CallStatus"] == "completed"
    assert all(h.signed for h in phone.hits)


# -- the fake's own life ----------------------------------------------------------------------
def test_reset_forgets_everything(twilio: Twilio) -> None:
    fake = twilio.fake
    twilio.post("/Messages.json", {**MESSAGE, "Colour": "red"})
    twilio.post("/Messages.json", MESSAGE)
    fake.refuse(HUMAN)
    fake.reset()
    assert (fake.messages, fake.violations, fake.requests, fake.numbers) == ([], [], [], {})
    fake.add_number(OPERATOR)
    assert twilio.post("/Messages.json", MESSAGE).status_code == 201


def test_twilio_fake_serves_for_the_block_only() -> None:
    with twilio_fake() as server:
        base = server.base_url
        fake = server.fake
        assert fake.account_sid.startswith("AC") and len(fake.account_sid) == 34
        assert (
            httpx.get(f"{base}/2010-04-01/Accounts/{fake.account_sid}/Calls.json").status_code
            == 401
        )
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base}/2010-04-01/Accounts/{fake.account_sid}/Calls.json")
    with pytest.raises(RuntimeError, match="not being served"):
        fake.send_inbound(HUMAN, OPERATOR, "x", url="http://127.0.0.1:9/x")
