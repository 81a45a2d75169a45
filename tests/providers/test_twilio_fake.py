"""The contract fake itself: it accepts what Twilio's official Python client sends,
answers in the shapes the published description gives, refuses what Twilio refuses
(with Twilio's error codes), and signs what it posts as Twilio does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

import httpx
import pytest
from twilio.base.exceptions import TwilioRestException
from twilio.request_validator import RequestValidator
from twilio.rest import Client

from humanwire.testing.twilio import FakeTwilio, TwilioFakeServer, load_spec

OPERATOR = "+14155550142"
HUMAN = "+12025550100"
MESSAGE = {"To": HUMAN, "From": OPERATOR, "Body": "x"}


@pytest.fixture
def twilio() -> Iterator[tuple[TwilioFakeServer, Client]]:
    fake = FakeTwilio()
    fake.add_number(OPERATOR)
    with TwilioFakeServer(fake) as server:
        client = Client(fake.account_sid, fake.auth_token)
        client.api.base_url = server.base_url
        yield server, client


class Recorder:
    """A plain HTTP server that records what is posted to it."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, str], str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length).decode()
                signature = self.headers.get("X-Twilio-Signature", "")
                recorder.posts.append((self.path, dict(parse_qsl(body)), signature))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()


def test_the_official_client_sends_a_message(twilio: tuple[TwilioFakeServer, Client]) -> None:
    server, client = twilio
    message = client.messages.create(to=HUMAN, from_=OPERATOR, body="Hello")
    assert message.sid.startswith("SM") and message.status == "queued"
    assert server.fake.messages[0].params == {"To": HUMAN, "From": OPERATOR, "Body": "Hello"}
    fetched = client.messages(message.sid).fetch()
    assert fetched.to == HUMAN
    assert server.fake.violations == []


def test_its_answers_follow_the_published_description(
    twilio: tuple[TwilioFakeServer, Client],
) -> None:
    server, _client = twilio
    spec = load_spec()
    fake = server.fake
    auth = (fake.account_sid, fake.auth_token)
    base = f"{server.base_url}/2010-04-01/Accounts/{fake.account_sid}"
    created = httpx.post(
        f"{base}/Messages.json", auth=auth, data={"To": HUMAN, "From": OPERATOR, "Body": "x"}
    )
    operation = spec.operation("POST", f"/2010-04-01/Accounts/{fake.account_sid}/Messages.json")
    spec.check_response(operation, 201, created.json())
    call = httpx.post(
        f"{base}/Calls.json",
        auth=auth,
        data={"To": HUMAN, "From": OPERATOR, "Twiml": "<Response><Hangup/></Response>"},
    )
    operation = spec.operation("POST", f"/2010-04-01/Accounts/{fake.account_sid}/Calls.json")
    spec.check_response(operation, 201, call.json())
    numbers = httpx.get(f"{base}/IncomingPhoneNumbers.json", auth=auth)
    path = f"/2010-04-01/Accounts/{fake.account_sid}/IncomingPhoneNumbers.json"
    spec.check_response(spec.operation("GET", path), 200, numbers.json())


def test_calls_and_numbers_through_the_official_client(
    twilio: tuple[TwilioFakeServer, Client],
) -> None:
    server, client = twilio
    fake = server.fake
    fake.add_available("+14155550177")
    offers = client.available_phone_numbers("US").local.list(area_code=415)
    assert [o.phone_number for o in offers] == ["+14155550177"]
    bought = client.incoming_phone_numbers.create(
        phone_number="+14155550177", sms_url="https://hw.example.com/sms"
    )
    assert fake.number("+14155550177") is not None
    client.incoming_phone_numbers(bought.sid).update(voice_url="https://hw.example.com/voice")
    updated = fake.number("+14155550177")
    assert updated is not None and updated.voice_url == "https://hw.example.com/voice"
    client.incoming_phone_numbers(bought.sid).delete()
    assert fake.number("+14155550177") is None
    call = client.calls.create(
        to=HUMAN, from_=OPERATOR, twiml="<Response><Say>Hi</Say><Hangup/></Response>"
    )
    assert call.sid.startswith("CA")
    assert fake.violations == []


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"To": "+1555", "From": OPERATOR, "Body": "x"}, 21211),
        ({"To": HUMAN, "From": "+14155550199", "Body": "x"}, 21606),
        ({"To": HUMAN, "From": OPERATOR}, 21602),
        ({"To": f"whatsapp:{HUMAN}", "From": OPERATOR, "Body": "x"}, 21910),
        ({"From": OPERATOR, "Body": "x"}, 21604),
    ],
)
def test_messages_twilio_refuses_are_refused_with_its_codes(
    twilio: tuple[TwilioFakeServer, Client], params: dict[str, str], code: int
) -> None:
    server, _client = twilio
    with pytest.raises(TwilioRestException) as caught:
        _post(server, "/Messages.json", params)
    assert caught.value.code == code
    assert caught.value.status == 400
    assert [v.code for v in server.fake.violations] == [code]


def _post(server: TwilioFakeServer, path: str, params: dict[str, str]) -> None:
    fake = server.fake
    response = httpx.post(
        f"{server.base_url}/2010-04-01/Accounts/{fake.account_sid}{path}",
        auth=(fake.account_sid, fake.auth_token),
        data=params,
    )
    if response.is_error:
        body = response.json()
        raise TwilioRestException(response.status_code, path, body["message"], body["code"], "POST")


def test_unknown_parameters_and_wrong_types_are_refused(
    twilio: tuple[TwilioFakeServer, Client],
) -> None:
    server, _client = twilio
    with pytest.raises(TwilioRestException) as unknown:
        _post(
            server, "/Messages.json", {"To": HUMAN, "From": OPERATOR, "Body": "x", "Colour": "red"}
        )
    assert "Colour" in unknown.value.msg
    with pytest.raises(TwilioRestException) as typed:
        _post(
            server,
            "/Calls.json",
            {"To": HUMAN, "From": OPERATOR, "Url": "https://a.example/t", "TimeLimit": "soon"},
        )
    assert "TimeLimit" in typed.value.msg
    with pytest.raises(TwilioRestException):
        _post(
            server,
            "/Messages.json",
            {"To": HUMAN, "From": OPERATOR, "Body": "x", "StatusCallback": "not a url"},
        )
    assert len(server.fake.violations) == 3


def test_wrong_credentials_are_401_20003(twilio: tuple[TwilioFakeServer, Client]) -> None:
    server, _client = twilio
    client = Client(server.fake.account_sid, "wrong-token")
    client.api.base_url = server.base_url
    with pytest.raises(TwilioRestException) as caught:
        client.messages.create(to=HUMAN, from_=OPERATOR, body="x")
    assert (caught.value.status, caught.value.code) == (401, 20003)


def test_callbacks_are_signed_as_twilio_signs_them(
    twilio: tuple[TwilioFakeServer, Client],
) -> None:
    server, client = twilio
    recorder = Recorder()
    try:
        server.fake.fail_delivery(HUMAN, "undelivered", 30003)
        client.messages.create(
            to=HUMAN, from_=OPERATOR, body="x", status_callback=f"{recorder.url}/status?x=1"
        )
        server.fake.wait_for(lambda: len(recorder.posts) == 2)
        validator = RequestValidator(server.fake.auth_token)
        statuses = []
        for path, params, signature in recorder.posts:
            assert validator.validate(f"{recorder.url}{path}", params, signature)
            assert not validator.validate(
                f"{recorder.url}{path}", {**params, "Body": "y"}, signature
            )
            statuses.append((params["MessageStatus"], params.get("ErrorCode")))
        assert statuses == [("sent", None), ("undelivered", "30003")]
    finally:
        recorder.close()
