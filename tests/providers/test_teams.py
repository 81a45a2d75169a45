"""The teams channel through its real provider (httpx on the Bot Framework Connector)
against the Teams contract fake, on loopback and on both stores: an install gives the
person's conversation reference, a proactive ask is answered by the next message in the
chat, a person without the app installed is refused naming ``to``, approvals by an
Adaptive Card's ``Action.Execute`` (the card replaced with the outcome in the invoke's
answer and in the conversation), and the messaging endpoint refusing what it cannot
verify or read."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest
from teams_support import TeamsLive, teams_config

from humanwire.server.runtime.runner import ServiceRunner
from humanwire.server.runtime.settings import load_settings
from humanwire.testing.service import fast_config
from humanwire.testing.teams import TeamsFakeServer

ACTION = {"name": "restart", "arguments": {"service": "api"}}


def _in_background(call: Callable[[], httpx.Response]) -> tuple[threading.Thread, dict[str, Any]]:
    answer: dict[str, Any] = {}

    def run() -> None:
        sent = call()
        answer.update(sent.json(), status_code=sent.status_code)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answer


def _until(predicate: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _clean(live: TeamsLive) -> None:
    assert live.fake.violations == [] and live.fake.errors == []


# -- asks ---------------------------------------------------------------------------------
def test_a_proactive_ask_is_answered_by_the_next_message_in_the_chat(
    teams_live: TeamsLive,
) -> None:
    live = teams_live
    asking, answer = _in_background(lambda: live.ask(message="Ship it?", waitTime=30))
    asked = live.sent(live.ada)
    assert asked.text == "Ship it?"
    said = live.fake.say(live.ada, "yes, ship it")
    assert said.status_code == 200
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["responded"] is True and "yes, ship it" in answer["response"]
    _clean(live)


def test_a_person_without_the_app_installed_is_refused_naming_to(teams_live: TeamsLive) -> None:
    live = teams_live
    eve = live.fake.add_user("Eve")
    refused = live.http.post("/messages/teams", json={"to": eve.id, "message": "hi", "waitTime": 5})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "invalid_to_number"
    assert "installed" in refused.json()["error"]["message"]
    assert live.fake.sent_to(eve) == []


def test_an_uninstall_forgets_the_conversation(teams_live: TeamsLive) -> None:
    live = teams_live
    fake = live.fake
    removal = {**fake.sender._base(live.ada, "installationUpdate"), "action": "remove"}
    body = json.dumps(removal).encode()
    assert fake.post(body, fake.token()).status_code == 200
    refused = live.ask(message="still there?", waitTime=5)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_to_number"


# -- channel cards ------------------------------------------------------------------------
def test_a_channel_card_of_type_teams_asks_in_the_chat_and_is_answered_there(
    teams_live: TeamsLive,
) -> None:
    live = teams_live
    made = live.http.post(
        "/channels",
        json={
            "type": "teams",
            "to": live.ada.id,
            "waitTime": 30,
            "messageTemplate": "From the deploy bot: {{message}}",
        },
    )
    assert made.status_code == 201, made.text
    card = made.json()
    assert (card["type"], card["to"]) == ("teams", live.ada.id)
    asking, answer = _in_background(
        lambda: live.http.post(f"/messages/{card['id']}", json={"message": "Ship it?"})
    )
    asked = live.sent(live.ada)
    assert asked.text == "From the deploy bot: Ship it?"
    assert live.fake.say(live.ada, "ship").status_code == 200
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert (answer["responded"], answer["reply"]) == (True, "ship")
    status = live.http.get(f"/interactions/{answer['interactionId']}/status").json()
    assert (status["channel"], status["status"]) == ("teams", "ended"), status
    _clean(live)


def test_a_teams_card_refuses_a_bad_to_and_is_only_its_accounts(teams_live: TeamsLive) -> None:
    live = teams_live
    for to in ("ada", "+14155550100", "29:", "29:has space", "28:bot", 29):
        bad = live.http.post("/channels", json={"type": "teams", "to": to, "waitTime": 30})
        assert bad.status_code == 400, (to, bad.text)
        assert bad.json()["error"]["field"] == "to", bad.text
    # A well-formed id of someone without the app: the card is made, its send refused as
    # /messages/teams refuses it (400 naming to), and nothing goes out.
    eve = live.fake.add_user("Eve")
    made = live.http.post("/channels", json={"type": "teams", "to": eve.id, "waitTime": 5})
    assert made.status_code == 201, made.text
    refused = live.http.post(f"/messages/{made.json()['id']}", json={"message": "hi"})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "invalid_to_number"
    assert refused.json()["error"]["field"] == "to"
    assert live.fake.sent_to(eve) == []
    # Another account's card is not found, to send through or to read.
    card = live.http.post("/channels", json={"type": "teams", "to": live.ada.id, "waitTime": 5})
    other_key = live.runner.create_account("other")
    with httpx.Client(
        base_url=live.base_url, headers={"Authorization": f"Bearer {other_key}"}, timeout=30
    ) as other:
        card_id = card.json()["id"]
        sent = other.post(f"/messages/{card_id}", json={"message": "hi"})
        assert sent.status_code == 404, sent.text
        assert other.get(f"/channels/{card_id}").status_code == 404
    assert live.fake.sent_to(live.ada) == []


# -- approvals ----------------------------------------------------------------------------
def _approve(live: TeamsLive, **body: Any) -> httpx.Response:
    return live.http.post(
        "/approvals",
        json={
            "title": "Restart the API?",
            "action": ACTION,
            "approvers": [{"channel": "teams", "to": live.ada.id}],
            **body,
        },
    )


def test_an_approver_decides_on_the_card_and_it_shows_the_outcome(teams_live: TeamsLive) -> None:
    live = teams_live
    asking, answer = _in_background(lambda: _approve(live, waitTime=30))
    asked = live.sent(live.ada)
    [card] = asked.cards()
    assert card["version"] == "1.5"
    verbs = [a["verb"] for a in asked.actions() if a["type"] == "Action.Execute"]
    assert verbs == ["approve", "reject"]
    clicked = live.fake.execute(asked, live.ada, "approve")
    assert clicked.status_code == 200
    replaced = clicked.json()
    assert replaced["statusCode"] == 200
    assert replaced["type"] == "application/vnd.microsoft.card.adaptive"
    shown = json.dumps(replaced["value"])
    assert "Approved by Ada Lovelace" in shown and "Action.Execute" not in shown
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["decision"] == "approved"
    assert answer["decisions"][0]["via"] == "teams_button"
    # The conversation's copy is replaced too (PUT), for everyone in it.
    _until(lambda: len(asked.edits) >= 2)
    assert asked.actions() == [] and "Approved by" in json.dumps(asked.cards())
    _clean(live)


def test_an_invoke_is_taken_once_and_only_from_an_approver(teams_live: TeamsLive) -> None:
    live = teams_live
    fake = live.fake
    interaction_id = _approve(live, followUpTime=60).json()["interactionId"]
    asked = live.sent(live.ada)
    eve = fake.add_user("Eve")
    fake.install(eve)
    refused = fake.execute(asked, eve, "approve")
    assert "not yours" in refused.json()["value"]
    assert live.http.get(f"/approvals/{interaction_id}").json()["decisions"] == []
    invoke = fake.sender._execute(asked, live.ada, "reject", {})
    body = json.dumps(invoke.activity).encode()
    taken = fake.post(body, fake.token())
    again = fake.post(body, fake.token())
    assert taken.status_code == 200 and taken.json()["statusCode"] == 200
    assert again.status_code == 403 and again.json()["error"]["code"] == "forbidden"
    _until(lambda: live.http.get(f"/approvals/{interaction_id}").json()["status"] == "ended")
    status = live.http.get(f"/approvals/{interaction_id}").json()
    assert status["decision"] == "rejected" and len(status["decisions"]) == 1


# -- the messaging endpoint ---------------------------------------------------------------
def test_the_endpoint_refuses_what_it_cannot_verify_or_read(teams_live: TeamsLive) -> None:
    live = teams_live
    fake = live.fake
    activity = {**fake.sender._base(live.ada, "message"), "text": "hello"}
    body = json.dumps(activity).encode()
    for token in (
        None,
        "not-a-jwt",
        fake.token(kid="rolled-key"),
        fake.token(exp=int(time.time()) - 3600),
        fake.token(iss="https://evil.example"),
        fake.token(aud="another-app"),
        fake.token("https://evil.example/amer/"),
    ):
        refused = fake.post(body, token)
        assert refused.status_code == 401, (token, refused.text)
        assert refused.json()["error"]["code"] == "unauthorized"
    ours = fake.service_url
    for garbage in (
        {"serviceUrl": ours, "channelId": "msteams"},
        {"serviceUrl": ours, "channelId": "msteams", "type": "message", "id": "1"},
        {**activity, "from": "ada"},
        {**activity, "conversation": {}},
        {**activity, "text": 5},
        {**activity, "serviceUrl": ours, "id": ""},
    ):
        refused = fake.post(json.dumps(garbage).encode(), fake.token())
        assert refused.status_code == 400, (garbage, refused.text)
        assert refused.json()["error"]["code"] == "invalid_request"
    other_tenant = {
        **activity,
        "conversation": {**activity["conversation"], "tenantId": "another-tenant"},
    }
    refused = fake.post(json.dumps(other_tenant).encode(), fake.token())
    assert refused.status_code == 403


# -- settings and readiness ---------------------------------------------------------------
APP = "8f0e4b0c-1d2e-4f3a-9b8c-7d6e5f4a3b2c"


def test_teams_settings_from_the_file_and_the_environment(tmp_path: Any) -> None:
    path = tmp_path / "humanwire.toml"
    path.write_text(f'public_url = "https://hw.example.com"\n[teams]\napp_id = "{APP.upper()}"\n')
    env = {"HUMANWIRE_TEAMS_APP_PASSWORD": "s3cret~value", "HUMANWIRE_TEAMS_TENANT_ID": APP}
    config = load_settings(path, env, {}).to_service_config()
    assert config.teams is not None and config.teams.app_id == APP
    assert config.teams.token_endpoint == (
        f"https://login.microsoftonline.com/{APP}/oauth2/v2.0/token"
    )
    assert "s3cret" not in repr(config.teams)
    with pytest.raises(Exception, match=r"teams\.app_password"):
        load_settings(path, {}, {})
    path.write_text('[teams]\napp_id = "not-a-guid"\n')
    with pytest.raises(Exception, match="GUID"):
        load_settings(path, {}, {})


def test_readyz_reports_the_secret_accepted_or_refused(fake_teams: TeamsFakeServer) -> None:
    config = teams_config(fake_teams)
    for password, ok, detail in (
        (config.app_password, True, "accepted"),
        ("wrong", False, "refused"),
    ):
        runner = ServiceRunner(
            replace(fast_config(":memory:"), teams=replace(config, app_password=password))
        )
        runner.start()
        try:
            check = httpx.get(f"{runner.base_url}/readyz").json()["checks"]["teams"]
        finally:
            runner.stop()
        assert check["ok"] is ok and detail in check["detail"], check
