"""The Bot Framework token on an activity, verified in full: each hostile token is
refused as ``Unverified`` (the route's 401), never let through or raised as something
else (a 500). No test reaches Microsoft: the key set is the contract fake's."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from humanwire.server.delivery.provider_routes import Unverified
from humanwire.server.delivery.teams.auth import BotFrameworkToken, KeySet
from humanwire.testing.teams import FakeTeams

SERVICE_URL = "https://smba.trafficmanager.net/amer/"


@pytest.fixture
def fake() -> FakeTeams:
    fake = FakeTeams()
    fake.state.service_url = SERVICE_URL
    return fake


def _body(service_url: str = SERVICE_URL, channel: str = "msteams") -> bytes:
    return json.dumps(
        {"type": "message", "id": "1", "serviceUrl": service_url, "channelId": channel}
    ).encode()


def _verifier(fake: FakeTeams) -> BotFrameworkToken:
    return BotFrameworkToken(fake.app_id, KeySet(fake.state.jwks()))


def test_the_bot_frameworks_token_is_taken(fake: FakeTeams) -> None:
    claims = _verifier(fake).claims(f"Bearer {fake.token()}", _body())
    assert claims["aud"] == fake.app_id and claims["serviceurl"] == SERVICE_URL


def test_a_service_url_spelt_with_or_without_its_slash_is_the_same(fake: FakeTeams) -> None:
    _verifier(fake).claims(f"Bearer {fake.token(SERVICE_URL.rstrip('/'))}", _body())


def _foreign_key() -> Any:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


HOSTILE: dict[str, Callable[[FakeTeams], str]] = {
    "no scheme": lambda f: f.token(),
    "basic": lambda f: "Basic " + f.token(),
    "empty": lambda f: "Bearer ",
    "not a jwt": lambda f: "Bearer not.a.jwt",
    "garbage": lambda f: "Bearer " + "\x00\xff" * 3,
    "huge": lambda f: "Bearer " + "a" * 20_000,
    "unknown kid": lambda f: "Bearer " + f.token(kid="someone-elses-key"),
    "no kid": lambda f: "Bearer " + f.token(kid=""),
    "foreign key, same kid": lambda f: "Bearer " + f.token(key=_foreign_key()),
    "foreign key, other kid": lambda f: "Bearer " + f.token(key=_foreign_key(), kid="k2"),
    "hs256": lambda f: "Bearer " + f.token(algorithm="HS256"),
    "expired": lambda f: "Bearer " + f.token(exp=int(time.time()) - 3600),
    "not yet valid": lambda f: "Bearer " + f.token(nbf=int(time.time()) + 3600),
    "no expiry": lambda f: "Bearer " + f.token(exp=None),
    "other issuer": lambda f: "Bearer " + f.token(iss="https://evil.example"),
    "entra issuer": lambda f: "Bearer " + f.token(iss="https://login.microsoftonline.com/x/v2.0"),
    "no issuer": lambda f: "Bearer " + f.token(iss=None),
    "other audience": lambda f: "Bearer " + f.token(aud="another-app"),
    "no audience": lambda f: "Bearer " + f.token(aud=None),
    "other service url": lambda f: "Bearer " + f.token("https://evil.example/"),
    "no service url": lambda f: "Bearer " + f.token(serviceurl=None),
    "service url not a string": lambda f: "Bearer " + f.token(serviceurl=["x"]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_token_is_refused(fake: FakeTeams, name: str) -> None:
    authorization = HOSTILE[name](fake)
    with pytest.raises(Unverified):
        _verifier(fake).claims(authorization, _body())


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"[]", b'{"serviceUrl": 5}', b'{"type": "message"}', b"\xff\xfe"],
)
def test_an_activity_without_its_service_url_is_refused(fake: FakeTeams, body: bytes) -> None:
    with pytest.raises(Unverified):
        _verifier(fake).claims(f"Bearer {fake.token()}", body)


def test_a_key_that_endorses_other_channels_only_is_refused(fake: FakeTeams) -> None:
    with pytest.raises(Unverified, match="endorse"):
        _verifier(fake).claims(f"Bearer {fake.token()}", _body(channel="webchat"))


def test_an_unknown_key_id_asks_for_the_key_set_again_at_most_once_a_while(
    fake: FakeTeams,
) -> None:
    keys = KeySet(fake.state.jwks())
    asked: list[int] = []
    keys.on_miss = lambda: asked.append(1)
    verifier = BotFrameworkToken(fake.app_id, keys)
    for _ in range(3):
        with pytest.raises(Unverified):
            verifier.claims("Bearer " + fake.token(kid="rolled"), _body())
    assert asked == [1]


def test_an_empty_key_set_takes_nothing(fake: FakeTeams) -> None:
    with pytest.raises(Unverified):
        BotFrameworkToken(fake.app_id, KeySet({"keys": []})).claims(
            f"Bearer {fake.token()}", _body()
        )
