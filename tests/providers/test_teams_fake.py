"""The Teams contract fake holds a bot to the Connector's description: a token from its
token endpoint, a body the description takes (strictly: a misspelt field is refused),
the description's error shape; its key set verifies what it signs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from humanwire.server.delivery.teams.auth import BotFrameworkToken, KeySet
from humanwire.testing.teams import TeamsFakeServer


@pytest.fixture
def teams() -> Iterator[TeamsFakeServer]:
    with TeamsFakeServer() as server:
        yield server


def _token(teams: TeamsFakeServer, secret: str | None = None) -> httpx.Response:
    fake = teams.fake
    return httpx.post(
        teams.token_url,
        data={
            "grant_type": "client_credentials",
            "client_id": fake.app_id,
            "client_secret": secret or fake.app_password,
            "scope": "https://api.botframework.com/.default",
        },
    )


def _bot(teams: TeamsFakeServer) -> httpx.Client:
    token = _token(teams).json()["access_token"]
    return httpx.Client(
        base_url=teams.fake.service_url, headers={"Authorization": f"Bearer {token}"}
    )


def test_a_token_needs_the_apps_secret(teams: TeamsFakeServer) -> None:
    assert _token(teams).status_code == 200
    refused = _token(teams, "wrong")
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"


def test_the_connector_wants_a_token_it_issued(teams: TeamsFakeServer) -> None:
    ada = teams.fake.add_user("ada")
    answer = httpx.post(
        f"{teams.fake.service_url}v3/conversations",
        json={"members": [{"id": ada.id}]},
        headers={"Authorization": "Bearer made-up"},
    )
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "Unauthorized"


def test_a_misspelt_field_is_refused_with_the_descriptions_error(teams: TeamsFakeServer) -> None:
    ada = teams.fake.add_user("ada")
    with _bot(teams) as bot:
        answer = bot.post("v3/conversations", json={"members": [{"id": ada.id}], "is_group": False})
    assert answer.status_code == 400
    assert "is_group" in answer.json()["error"]["message"]
    assert teams.fake.violations and "is_group" in teams.fake.violations[0]


def test_a_proactive_message_needs_the_app_installed(teams: TeamsFakeServer) -> None:
    fake = teams.fake
    ada = fake.add_user("ada")
    with _bot(teams) as bot:
        refused = bot.post("v3/conversations", json={"members": [{"id": ada.id}]})
        assert refused.status_code == 403
        fake.state.personal_conversation(ada).installed = True
        conversation = bot.post(
            "v3/conversations", json={"members": [{"id": ada.id}], "tenantId": fake.tenant_id}
        ).json()["id"]
        sent = bot.post(
            f"v3/conversations/{conversation}/activities", json={"type": "message", "text": "hi"}
        )
        assert sent.status_code == 201
        updated = bot.put(
            f"v3/conversations/{conversation}/activities/{sent.json()['id']}",
            json={"type": "message", "text": "hi again"},
        )
        assert updated.status_code == 200
    assert [a.text for a in fake.sent_to(ada)] == ["hi again"]
    assert fake.violations == [] and fake.errors == []


def test_its_key_set_verifies_what_it_signs(teams: TeamsFakeServer) -> None:
    keys = KeySet(httpx.get(teams.jwks_url).json())
    body = json.dumps({"serviceUrl": teams.fake.service_url, "channelId": "msteams"}).encode()
    claims = BotFrameworkToken(teams.fake.app_id, keys).claims(f"Bearer {teams.fake.token()}", body)
    assert claims["serviceurl"] == teams.fake.service_url


def _card(*body: dict[str, object]) -> dict[str, object]:
    return {
        "type": "message",
        "attachments": [
            {
                "contentType": "application/vnd.microsoft.card.adaptive",
                "content": {"type": "AdaptiveCard", "version": "1.5", "body": list(body)},
            }
        ],
    }


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"type": "Input.Text", "id": "notes", "isMultiLine": True}, "isMultiLine"),
        ({"type": "Input.Toggle", "id": "gift"}, "title"),
        ({"type": "Input.ChoiceSet", "id": "size", "choices": [{"title": "S"}]}, "value"),
        ({"type": "Input.Text", "label": "City"}, "id"),
        ({"type": "Input.Date", "id": "day"}, "Input.Date"),
    ],
)
def test_a_card_teams_would_not_render_as_sent_is_refused(
    teams: TeamsFakeServer, body: dict[str, object], named: str
) -> None:
    fake = teams.fake
    ada = fake.add_user("ada")
    fake.state.personal_conversation(ada).installed = True
    with _bot(teams) as bot:
        conversation = bot.post("v3/conversations", json={"members": [{"id": ada.id}]}).json()["id"]
        fine = bot.post(
            f"v3/conversations/{conversation}/activities",
            json=_card({"type": "TextBlock", "text": "hi"}, {"type": "Input.Text", "id": "a"}),
        )
        assert fine.status_code == 201 and fake.violations == []
        refused = bot.post(f"v3/conversations/{conversation}/activities", json=_card(body))
        twice = bot.post(
            f"v3/conversations/{conversation}/activities",
            json=_card(
                {"type": "Input.Text", "id": "a"}, {"type": "Input.Toggle", "id": "a", "title": "A"}
            ),
        )
    assert refused.status_code == 400, refused.text
    assert fake.violations and "attachments/0: the Adaptive Card" in fake.violations[0]
    assert named in fake.violations[0] or named in refused.text
    assert twice.status_code == 400 and "two inputs have the id 'a'" in twice.text
