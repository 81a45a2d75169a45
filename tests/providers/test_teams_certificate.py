"""The Teams bot authenticating with a certificate in place of a client secret: each token
request carries a client assertion (a PS256 JWT with the certificate's thumbprints,
signed with its private key), which the Teams fake's token endpoint verifies as Entra ID
does (the signature against the uploaded certificate, aud, iss = sub = the app id, jti,
nbf, exp) and refuses otherwise; an ask and its reply over it on both stores; a refused
certificate or an assertion outside its time range reported at /readyz and to the API
caller as a provider error, never a 500; the settings' keys."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from teams_support import teams_config

from humanwire.server.config import TeamsConfig
from humanwire.server.delivery.teams.certificate import ASSERTION_TYPE, CertificateCredential
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.server.runtime.settings import load_settings
from humanwire.testing.service import fast_config
from humanwire.testing.teams import TeamsFakeServer, make_certificate

SCOPE = "https://api.botframework.com/.default"
APP = "8f0e4b0c-1d2e-4f3a-9b8c-7d6e5f4a3b2c"


def _certificate_config(server: TeamsFakeServer, certificate: str, key: str) -> TeamsConfig:
    return replace(
        teams_config(server), app_password=None, certificate=certificate, private_key=key
    )


@contextmanager
def _running(database: str, config: TeamsConfig) -> Iterator[tuple[ServiceRunner, httpx.Client]]:
    runner = ServiceRunner(replace(fast_config(database), teams=config))
    runner.start()
    key = runner.create_account("tester")
    http = httpx.Client(
        base_url=runner.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    try:
        yield runner, http
    finally:
        http.close()
        runner.stop()


def _teams_check(runner: ServiceRunner) -> dict[str, Any]:
    check: dict[str, Any] = httpx.get(f"{runner.base_url}/readyz").json()["checks"]["teams"]
    return check


# -- through the service -------------------------------------------------------------------
def test_an_ask_and_its_reply_with_a_certificate_credential(
    database: str, fake_teams: TeamsFakeServer
) -> None:
    fake = fake_teams.fake
    certificate, key = fake.add_certificate()
    with _running(database, _certificate_config(fake_teams, certificate, key)) as (runner, http):
        check = _teams_check(runner)
        assert check["ok"] is True and "teams.certificate accepted" in check["detail"], check
        fake.messaging_endpoint = f"{runner.base_url}/providers/teams/messages"
        ada = fake.add_user("Ada Lovelace")
        assert fake.install(ada).status_code == 200
        answer: dict[str, Any] = {}

        def ask() -> None:
            asked = http.post(
                "/messages/teams", json={"to": ada.id, "message": "Ship it?", "waitTime": 30}
            )
            answer.update(asked.json(), status_code=asked.status_code)

        asking = threading.Thread(target=ask)
        asking.start()
        fake.wait_for(lambda: len(fake.sent_to(ada)) >= 1, timeout=10)
        assert fake.sent_to(ada)[0].text == "Ship it?"
        assert fake.say(ada, "yes, ship it").status_code == 200
        asking.join(30)
        assert answer["status_code"] == 200, answer
        assert answer["responded"] is True and "yes, ship it" in answer["response"]
    assert fake.violations == [] and fake.errors == []


@pytest.mark.parametrize("problem", ["unregistered", "clock", "another key"])
def test_a_refused_assertion_is_reported_never_a_500(
    fake_teams: TeamsFakeServer, problem: str
) -> None:
    fake = fake_teams.fake
    if problem == "unregistered":
        # A certificate never uploaded to the registration (a rotation half done).
        certificate, key = make_certificate()
        expected = "AADSTS700027"
    elif problem == "another key":
        # Given past the settings' checks (a config built in code): nothing is signed.
        certificate, key = fake.add_certificate()[0], make_certificate()[1]
        expected = "not the certificate's"
    else:
        # The service's clock an hour behind Entra's: its assertions arrive expired.
        certificate, key = fake.add_certificate()
        fake.clock_skew = 3600
        expected = "AADSTS700024"
    with _running(":memory:", _certificate_config(fake_teams, certificate, key)) as (runner, http):
        check = _teams_check(runner)
        assert check["ok"] is False, check
        assert "teams.certificate" in check["detail"] and expected in check["detail"], check
        if problem != "another key":
            assert "refused by the token endpoint" in check["detail"], check
        fake.messaging_endpoint = f"{runner.base_url}/providers/teams/messages"
        ada = fake.add_user("Ada Lovelace")
        assert fake.install(ada).status_code == 200
        asked = http.post("/messages/teams", json={"to": ada.id, "message": "Ship it?"})
        assert asked.status_code == 502, asked.text
        error = asked.json()["error"]
        assert error["code"] == "provider_error" and "teams.certificate" in error["message"]
        assert fake.sent_to(ada) == []


# -- the fake's token endpoint ----------------------------------------------------------------
def _assertion(fake_app: str, audience: str, key: str, certificate: str, **changes: Any) -> str:
    credential = CertificateCredential.load(certificate, key)
    now = int(time.time())
    claims = {
        "aud": audience,
        "iss": fake_app,
        "sub": fake_app,
        "jti": str(uuid.uuid4()),
        "nbf": now,
        "iat": now,
        "exp": now + 600,
    }
    algorithm = changes.pop("alg", "PS256")
    signer = changes.pop("signer", None)
    claims.update(changes)
    claims = {name: value for name, value in claims.items() if value is not None}
    headers = {"x5t": credential.x5t, "x5t#S256": credential.x5t_s256}
    if algorithm == "HS256":
        return jwt.encode(claims, "s" * 64, algorithm="HS256", headers=headers)
    return jwt.encode(claims, signer or credential.key, algorithm=algorithm, headers=headers)


def _token(server: TeamsFakeServer, assertion: str, **form: str) -> httpx.Response:
    data = {
        "grant_type": "client_credentials",
        "client_id": server.fake.app_id,
        "scope": SCOPE,
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": assertion,
        **form,
    }
    return httpx.post(server.token_url, data=data, timeout=10)


def test_the_fakes_token_endpoint_verifies_the_assertion(fake_teams: TeamsFakeServer) -> None:
    server = fake_teams
    fake = server.fake
    certificate, key = fake.add_certificate()
    app, audience = fake.app_id, server.token_url
    for algorithm in ("PS256", "RS256"):
        good = _token(server, _assertion(app, audience, key, certificate, alg=algorithm))
        assert good.status_code == 200, good.text
        assert fake.state.token_valid(good.json()["access_token"])
    # Signed with another key, under the registered certificate's thumbprints.
    other = CertificateCredential.load(*make_certificate()).key
    stranger = make_certificate()
    cases: list[tuple[str, str]] = [
        (_assertion(app, audience, key, certificate, signer=other), "AADSTS700027"),
        (_assertion(app, audience, stranger[1], stranger[0]), "AADSTS700027"),
        (_assertion(app, audience, key, certificate, exp=int(time.time()) - 5), "AADSTS700024"),
        (_assertion(app, audience, key, certificate, nbf=int(time.time()) + 3600), "AADSTS700024"),
        (_assertion(app, audience + "x", key, certificate), "aud"),
        (_assertion(app, audience, key, certificate, iss=str(uuid.uuid4())), "iss and sub"),
        (_assertion(app, audience, key, certificate, jti=None), "jti"),
        (_assertion(app, audience, key, certificate, alg="HS256"), "RS256 or PS256"),
        ("not-a-jwt", "not a JWT"),
    ]
    for assertion, expected in cases:
        refused = _token(server, assertion)
        assert refused.status_code == 401, (expected, refused.text)
        body = refused.json()
        assert body["error"] == "invalid_client" and expected in body["error_description"]
    once = _assertion(app, audience, key, certificate)
    assert _token(server, once).status_code == 200
    replayed = _token(server, once)
    assert replayed.status_code == 401 and "used before" in replayed.text
    mixed = _token(server, _assertion(app, audience, key, certificate), client_secret="x")
    assert mixed.status_code == 400


# -- settings ------------------------------------------------------------------------------------
def _settings(tmp_path: Path, teams: str, env: dict[str, str] | None = None) -> Any:
    path = tmp_path / "humanwire.toml"
    path.write_text(f'public_url = "https://hw.example.com"\n[teams]\napp_id = "{APP}"\n{teams}')
    return load_settings(path, env or {}, {})


def test_the_certificate_settings(tmp_path: Path) -> None:
    certificate, key = make_certificate()
    (tmp_path / "bot.crt").write_text(certificate)
    (tmp_path / "bot.key").write_text(key)
    (tmp_path / "bot.pem").write_text(certificate + key)
    config = _settings(
        tmp_path,
        f'certificate = "{tmp_path / "bot.crt"}"\nprivate_key = "{tmp_path / "bot.key"}"\n',
    ).to_service_config()
    assert config.teams.certificate == certificate and config.teams.app_password is None
    assert "PRIVATE" not in repr(config.teams)
    combined = _settings(tmp_path, f'certificate = "{tmp_path / "bot.pem"}"\n')
    assert "PRIVATE KEY" in combined.to_service_config().teams.private_key
    env = {"HUMANWIRE_TEAMS_CERTIFICATE": certificate, "HUMANWIRE_TEAMS_PRIVATE_KEY": key}
    from_env = _settings(tmp_path, "", env).to_service_config()
    assert from_env.teams.private_key == key
    another_key = make_certificate()[1]
    expired = make_certificate(days=-1)
    (tmp_path / "old.pem").write_text(expired[0] + expired[1])
    for teams, message in (
        (f'certificate = "{tmp_path / "bot.crt"}"\n', r"teams\.private_key missing"),
        (f'certificate = "{tmp_path / "nope.crt"}"\n', r"teams\.certificate: cannot read"),
        (
            f'certificate = "{tmp_path / "bot.crt"}"\nprivate_key = """{another_key}"""\n',
            "not the certificate's",
        ),
        (f'certificate = "{tmp_path / "old.pem"}"\n', "the certificate expired"),
        (
            f'certificate = "{tmp_path / "bot.pem"}"\napp_password = "s3cret"\n',
            "both given",
        ),
        ("", r"teams\.app_password \(or teams\.certificate\)"),
    ):
        with pytest.raises(Exception, match=message):
            _settings(tmp_path, teams)
