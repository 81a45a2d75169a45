"""The Discord contract fake, driven by discord.py (REST only, as the service will use it)
and by a small interactions endpoint that verifies Discord's signature: what discord.py
sends passes the published description, what breaks it or Discord's prose limits is
refused in Discord's error shape, and interactions arrive signed and are held to the
3 s and the callback schema."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import discord
import discord.http
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from humanwire.testing._fake_server import FakeServer
from humanwire.testing.discord import DiscordFakeServer, FakeDiscord, load_spec
from humanwire.testing.discord.spec import SpecViolation


class _App:
    """An interactions endpoint: verifies, then answers by ``answer(payload)``."""

    def __init__(self, public_key: str) -> None:
        self.key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key))
        self.received: list[dict[str, Any]] = []
        self.answer: Any = lambda payload: {"type": 6}
        self.delay = 0.0

    def app(self) -> Starlette:
        async def endpoint(request: Request) -> Response:
            body = await request.body()
            signature = request.headers.get("x-signature-ed25519", "")
            timestamp = request.headers.get("x-signature-timestamp", "")
            try:
                self.key.verify(bytes.fromhex(signature), timestamp.encode() + body)
            except (InvalidSignature, ValueError):
                return Response("bad signature", status_code=401)
            payload = json.loads(body)
            self.received.append(payload)
            if payload["type"] == 1:
                return JSONResponse({"type": 1})
            if self.delay:
                time.sleep(self.delay)  # blocks its own server thread only
            return JSONResponse(self.answer(payload))

        return Starlette(routes=[Route("/interactions", endpoint, methods=["POST"])])


@pytest.fixture
def served() -> Iterator[DiscordFakeServer]:
    with DiscordFakeServer() as server:
        yield server


@pytest.fixture
def app(served: DiscordFakeServer) -> Iterator[_App]:
    endpoint = _App(served.fake.public_key)
    with FakeServer(endpoint) as server:
        served.fake.interactions_url = f"{server.base_url}/interactions"
        yield endpoint


@pytest.fixture
async def bot(served: DiscordFakeServer) -> AsyncIterator[Any]:
    previous = discord.http.Route.BASE
    discord.http.Route.BASE = served.api_base  # discord.py's one base, process-wide
    client = discord.Client(intents=discord.Intents.none())
    try:
        await client.login(served.fake.bot_token)
        yield client
    finally:
        await client.close()
        discord.http.Route.BASE = previous


def _buttons(interaction_id: str) -> Any:
    view = discord.ui.View(timeout=None)
    for choice, style in (("approve", discord.ButtonStyle.success), ("reject", None)):
        view.add_item(
            discord.ui.Button(
                label=choice.title(),
                style=style or discord.ButtonStyle.danger,
                custom_id=f"hw:{interaction_id}:{choice}",
            )
        )
    return view


async def test_discord_py_sends_a_dm_with_buttons_and_edits_it(
    served: DiscordFakeServer, bot: Any
) -> None:
    fake = served.fake
    ada = fake.add_user("ada")
    dm = await (await bot.fetch_user(int(ada.id))).create_dm()
    sent = await dm.send("Approve the deploy?", view=_buttons("int_1"))
    await sent.edit(content="Approved by ada", view=None)

    [message] = fake.posted_to(ada)
    assert message.content == "Approved by ada"
    assert message.components == [] and len(message.edits) == 1
    assert fake.violations == [] and fake.errors == []
    # discord.py sent the recipient as a JSON integer: taken, as Discord takes it
    create_dm = next(
        body for method, path, body in fake.state.requests if path.endswith("/channels")
    )
    assert isinstance(create_dm["recipient_id"], int)


async def test_a_dm_to_someone_sharing_no_server_is_refused_50278(
    served: DiscordFakeServer, bot: Any
) -> None:
    stranger = served.fake.add_user("stranger", in_guild=False)
    dm = await (await bot.fetch_user(int(stranger.id))).create_dm()
    with pytest.raises(discord.HTTPException) as raised:
        await dm.send("hello")
    assert raised.value.code == 50278
    assert served.fake.posted_to(stranger) == []


async def test_a_wrong_bot_token_is_401(served: DiscordFakeServer) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=served.api_base) as client:
        answer = await client.get("/users/@me", headers={"Authorization": "Bot nope"})
        missing = await client.get("/users/@me")
    assert answer.status_code == missing.status_code == 401
    assert answer.json()["code"] == 0


async def test_what_the_description_or_the_prose_refuses_is_refused(
    served: DiscordFakeServer,
) -> None:
    import httpx

    fake = served.fake
    channel = fake.add_channel("deploys")
    headers = {"Authorization": f"Bot {fake.bot_token}"}
    too_long = {"content": "x" * 2001}
    long_id = {
        "content": "?",
        "components": [
            {
                "type": 1,
                "components": [{"type": 2, "style": 1, "label": "A", "custom_id": "y" * 101}],
            }
        ],
    }
    twice = {
        "content": "?",
        "components": [
            {
                "type": 1,
                "components": [
                    {"type": 2, "style": 1, "label": "A", "custom_id": "same"},
                    {"type": 2, "style": 1, "label": "B", "custom_id": "same"},
                ],
            }
        ],
    }
    async with httpx.AsyncClient(base_url=served.api_base, headers=headers) as client:
        for body in (too_long, long_id, twice, {"content": 5}):
            answer = await client.post(f"/channels/{channel.id}/messages", json=body)
            assert answer.status_code == 400, body
            assert answer.json()["code"] == 50035
        unknown = await client.post("/channels/1/messages", json={"content": "hi"})
        assert unknown.status_code == 404 and unknown.json()["code"] == 10003
        not_json = await client.post(
            f"/channels/{channel.id}/messages",
            content=b"{",
            headers={"Content-Type": "application/json"},
        )
        assert not_json.status_code == 400
        nowhere = await client.get("/guilds/1")
        assert nowhere.status_code == 404
    assert len(fake.violations) == 6  # the four bodies, the bad JSON, the unknown route
    assert fake.posted_to(channel) == []


async def test_a_click_arrives_signed_and_its_update_edits_the_message(
    served: DiscordFakeServer, app: _App, bot: Any
) -> None:
    fake = served.fake
    ada = fake.add_user("ada")
    dm = await (await bot.fetch_user(int(ada.id))).create_dm()
    await dm.send("Approve?", view=_buttons("int_2"))
    app.answer = lambda payload: {"type": 7, "data": {"content": "Approved", "components": []}}

    [message] = fake.posted_to(ada)
    answer = fake.click(message, "hw:int_2:approve", ada)

    assert answer.status_code == 200
    [payload] = app.received
    assert payload["type"] == 3 and payload["data"]["custom_id"] == "hw:int_2:approve"
    assert payload["user"]["id"] == ada.id and payload["message"]["id"] == message.id
    assert message.content == "Approved" and message.components == []
    [interaction] = fake.state.interactions
    assert interaction.acknowledged and interaction.elapsed is not None
    assert fake.errors == []
    with pytest.raises(ValueError):
        fake.click(message, "hw:int_2:approve", ada)  # the buttons are gone


async def test_a_modal_opens_and_its_submission_carries_the_text(
    served: DiscordFakeServer, app: _App
) -> None:
    fake = served.fake
    ada = fake.add_user("ada")
    channel = fake.add_channel("asks")
    message = fake.state.create_message(
        channel.id,
        {
            "content": "Which region?",
            "components": [
                {
                    "type": 1,
                    "components": [
                        {"type": 2, "style": 1, "label": "Reply", "custom_id": "hw:i:reply"}
                    ],
                }
            ],
        },
    )

    def answer(payload: dict[str, Any]) -> dict[str, Any]:
        if payload["type"] == 3:
            row = {"type": 4, "custom_id": "text", "label": "Your answer", "style": 2}
            return {
                "type": 9,
                "data": {
                    "custom_id": "hw:i:form",
                    "title": "Reply",
                    "components": [{"type": 1, "components": [row]}],
                },
            }
        return {"type": 7, "data": {"content": "Thanks", "components": []}}

    app.answer = answer
    fake.click(message, "hw:i:reply", ada)
    [modal] = fake.modals
    assert modal.title == "Reply" and [i["custom_id"] for i in modal.inputs] == ["text"]
    fake.submit(modal, {"text": "eu-west"}, ada)

    submitted = app.received[-1]
    assert submitted["type"] == 5 and submitted["member"]["user"]["id"] == ada.id
    assert submitted["data"]["components"][0]["components"][0]["value"] == "eu-west"
    assert message.content == "Thanks"
    with pytest.raises(ValueError):
        fake.submit(modal, {"other": "x"}, ada)
    assert fake.errors == []


async def test_answers_discord_refuses_are_recorded(served: DiscordFakeServer, app: _App) -> None:
    fake = served.fake
    ada = fake.add_user("ada")
    channel = fake.add_channel("asks")
    button = {"type": 2, "style": 1, "label": "Go", "custom_id": "go"}
    message = fake.state.create_message(
        channel.id, {"content": "?", "components": [{"type": 1, "components": [button]}]}
    )
    app.answer = lambda payload: {"type": 99}
    fake.click(message, "go", ada)
    assert any("refuses" in error for error in fake.errors)

    app.answer = lambda payload: {"type": 6}
    app.delay = 3.5  # past Discord's 3 s: the token is gone
    fake.click(message, "go", ada)
    assert any("Unknown interaction" in error for error in fake.errors)


async def test_late_callbacks_and_followups_use_the_token(
    served: DiscordFakeServer, app: _App
) -> None:
    import httpx

    fake = served.fake
    ada = fake.add_user("ada")
    channel = fake.add_channel("asks")
    button = {"type": 2, "style": 1, "label": "Go", "custom_id": "go"}
    message = fake.state.create_message(
        channel.id, {"content": "?", "components": [{"type": 1, "components": [button]}]}
    )
    app.answer = lambda payload: {"type": 6}
    fake.click(message, "go", ada)
    [interaction] = fake.state.interactions
    async with httpx.AsyncClient(base_url=served.api_base) as client:
        again = await client.post(
            f"/interactions/{interaction.id}/{interaction.token}/callback", json={"type": 6}
        )
        assert again.status_code == 400 and again.json()["code"] == 40060
        followup = await client.post(
            f"/webhooks/{fake.application_id}/{interaction.token}?wait=true",
            json={"content": "Recorded."},
        )
        assert followup.status_code == 200, followup.text
        forged = await client.post(
            f"/webhooks/{fake.application_id}/not-the-token", json={"content": "x"}
        )
        assert forged.status_code == 404
    assert [m.content for m in fake.posted_to(channel)][-1] == "Recorded."
    assert fake.errors == []


async def test_ping_and_forged_signatures(served: DiscordFakeServer, app: _App) -> None:
    fake = served.fake
    assert fake.ping().json() == {"type": 1}
    body = json.dumps({"type": 1, "id": "1", "token": "t", "version": 1}).encode()
    assert fake.post_signed(body).status_code == 200
    assert fake.post_signed(body, signature="00" * 64).status_code == 401
    signature = fake.state.signing_key.sign(b"1700000000" + body).hex()
    stale = fake.post_signed(body, signature=signature, timestamp="1700000001")
    assert stale.status_code == 401  # signed over another timestamp


def test_the_description_finds_operations_and_refuses_unknown_ones() -> None:
    spec = load_spec()
    operation, values = spec.operation("PATCH", "/channels/5/messages/7")
    assert operation.operation_id == "update_message" and values == {
        "channel_id": "5",
        "message_id": "7",
    }
    assert spec.operation("GET", "/users/@me")[0].operation_id == "get_my_user"
    with pytest.raises(SpecViolation) as raised:
        spec.operation("DELETE", "/users/@me")
    assert raised.value.status == 405
    assert FakeDiscord().state.bot.bot
