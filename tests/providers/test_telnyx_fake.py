"""The Telnyx contract fake itself: the official ``telnyx`` client is served by it (every
operation the service uses, in the package's own encoding: aliases, deepObject queries,
comma arrays, pagination), and what the published request types refuse is refused and
recorded as a violation."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import telnyx

from humanwire.testing.telnyx import TelnyxFakeServer, telnyx_fake

OURS = "+13125550142"
FOR_SALE = "+13125550188"
HUMAN = "+12025550100"


@pytest.fixture
def served() -> Iterator[TelnyxFakeServer]:
    with telnyx_fake() as server:
        server.fake.add_number(OURS)
        server.fake.add_available(FOR_SALE)
        yield server


def test_the_official_client_is_served_without_a_violation(served: TelnyxFakeServer) -> None:
    fake = served.fake
    client = telnyx.Telnyx(api_key=fake.api_key, base_url=served.api_base, max_retries=0)
    sent = client.messages.send(from_=OURS, to=HUMAN, text="hi")
    assert sent.data is not None and sent.data.id == fake.sent_to(HUMAN)[0].id
    listed = client.phone_numbers.list(filter={"phone_number": OURS})
    [number] = list(listed)
    assert number.phone_number == OURS and number.id is not None
    client.phone_numbers.update(number.id, connection_id=fake.connection_id)
    client.phone_numbers.messaging.update(number.id, messaging_profile_id="profile-1")
    offers = client.available_phone_numbers.list(
        filter={"country_code": "US", "features": ["sms", "voice"]}
    )
    assert [o.phone_number for o in offers.data or []] == [FOR_SALE]
    order = client.number_orders.create(phone_numbers=[{"phone_number": FOR_SALE}])
    assert order.data is not None and order.data.status == "success"
    call = client.texml.accounts.calls.calls(
        fake.account_sid,
        body={
            "ApplicationSid": fake.connection_id,
            "To": HUMAN,
            "From": OURS,
            "Url": "http://127.0.0.1:9/v",
        },
    )
    assert call.status == "queued"
    fake.wait_idle()
    assert fake.violations == [] and fake.errors == []
    found = fake.number(OURS)
    assert found is not None and found.messaging_profile_id == "profile-1"


def test_what_the_published_types_refuse_is_a_violation(served: TelnyxFakeServer) -> None:
    fake = served.fake
    headers = {"Authorization": f"Bearer {fake.api_key}"}
    with httpx.Client(base_url=served.api_base, headers=headers) as client:
        refused = [
            client.post("/messages", json={"from": OURS, "to": HUMAN, "txt": "typo"}),
            client.post("/messages", json={"from": OURS, "text": "no to"}),
            client.post("/messages", json={"from": OURS, "to": HUMAN, "text": "x", "type": "FAX"}),
            client.get("/phone_numbers", params={"page[size]": "many"}),
            client.get("/phone_numbers", params={"filter[nope]": "1"}),
            client.post(
                f"/texml/Accounts/{fake.account_sid}/Calls",
                json={"To": HUMAN, "From": OURS, "Url": "http://x", "TimeLimit": "soon"},
            ),
        ]
    assert [r.status_code for r in refused] == [422] * 6
    pointers = [r.json()["errors"][0]["source"]["pointer"] for r in refused]
    assert pointers == ["/txt", "/to", "/type", "/page[size]", "/filter/nope", "/TimeLimit"]
    assert len(fake.violations) == 6
    assert fake.messages == []
    wrong = httpx.post(
        f"{served.api_base}/messages", json={}, headers={"Authorization": "Bearer x"}
    )
    assert wrong.status_code == 401 and wrong.json()["errors"][0]["code"] == "10009"


def test_its_webhooks_verify_with_its_public_key_only(served: TelnyxFakeServer) -> None:
    import base64

    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    fake = served.fake
    body = b'{"data": {"event_type": "message.received"}}'
    headers = fake.sign(body, 1_700_000_000)
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(fake.public_key))
    signature = base64.b64decode(headers["telnyx-signature-ed25519"])
    key.verify(signature, b"1700000000|" + body)
    with pytest.raises(InvalidSignature):
        key.verify(signature, b"1700000001|" + body)
