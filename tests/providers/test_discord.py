"""The discord channel through its real provider (discord.py's REST client) against the
Discord contract fake, on loopback and on both stores: a DM ask answered by Reply → the
modal's text, a post to a channel, a user sharing no server refused naming ``to``,
approvals by button (the message updated within Discord's 3 s, the outcome recorded,
a second click taken once), a form as a modal and a form too big for one as its page's
link, and the interactions endpoint refusing what it cannot verify or read."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest
from discord_support import DiscordLive, discord_config

from humanwire.server.delivery.discord.provider import custom_id, form_modal
from humanwire.server.runtime.runner import ServiceRunner
from humanwire.server.runtime.settings import load_settings
from humanwire.testing.discord import DiscordFakeServer
from humanwire.testing.service import fast_config
from humanwire.types import Form

pytest.importorskip("discord")

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


def _clean(live: DiscordLive) -> None:
    assert live.fake.violations == [] and live.fake.errors == []


# -- asks ---------------------------------------------------------------------------------
def test_a_dm_ask_is_answered_by_reply_and_the_modals_text(discord_live: DiscordLive) -> None:
    live = discord_live
    asking, answer = _in_background(
        lambda: live.ask(message="Ship it?", waitTime=30, metadata={"run": "7"})
    )
    asked = live.posted(live.ada)
    assert asked.content == "Ship it?"
    [reply] = asked.custom_ids()
    assert reply.startswith("hw:") and reply.endswith(":reply") and len(reply) <= 100
    opened = live.fake.click(asked, reply, live.ada)
    assert opened.json()["type"] == 9  # a modal
    modal = live.modal()
    assert [item["style"] for item in modal.inputs] == [2]  # one paragraph
    submitted = live.fake.submit(modal, {modal.inputs[0]["custom_id"]: "yes, ship"}, live.ada)
    assert submitted.json()["type"] == 7  # the message updated
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert (answer["responded"], answer["reply"]) == (True, "yes, ship")
    assert answer["metadata"] == {"run": "7"} and answer["deliveryStatus"] == "sent"
    assert "yes, ship" in asked.content and asked.components == []  # the button is gone
    assert all(i.elapsed is not None and i.elapsed < 3 for i in live.fake.state.interactions)
    _clean(live)


def test_a_post_to_a_channel_is_answered_by_anyone_there(discord_live: DiscordLive) -> None:
    live = discord_live
    channel = live.fake.add_channel("deploys")
    sent = live.http.post(
        "/messages/discord",
        json={"to": channel.id, "message": "Who is on call?", "followUpTime": 60},
    )
    assert sent.status_code == 200, sent.text
    interaction_id = sent.json()["interactionId"]
    asked = live.posted(channel)
    bob = live.fake.add_user("bob")
    live.fake.click(asked, asked.custom_ids()[0], bob)
    live.fake.submit(live.modal(), {"reply": "bob is"}, bob)
    _until(lambda: live.status(interaction_id) == "ended")
    _clean(live)


def test_someone_else_cannot_answer_a_dm_ask(discord_live: DiscordLive) -> None:
    live = discord_live
    sent = live.ask(message="Yours?", followUpTime=60).json()
    asked = live.posted(live.ada)
    eve = live.fake.add_user("eve")
    # The same buttons seen by Eve (a forged click on Ada's message): not hers to answer.
    refused = live.fake.click(asked, asked.custom_ids()[0], eve)
    assert refused.json()["type"] == 4 and refused.json()["data"]["flags"] == 64
    assert "not yours" in refused.json()["data"]["content"]
    assert live.fake.modals == []
    # A copy of the buttons on another message answers nothing either.
    copy = live.fake.state.create_message(
        asked.channel_id, {"content": "copy", "components": asked.components}
    )
    live.fake.click(copy, asked.custom_ids()[0], live.ada)
    assert live.fake.modals == []
    assert live.status(sent["interactionId"]) == "pending"
    # Nor can another account see the ask.
    with live.account("other") as other:
        assert other.get(f"/interactions/{sent['interactionId']}/status").status_code == 404


def test_a_user_sharing_no_server_with_the_app_is_refused_naming_to(
    discord_live: DiscordLive,
) -> None:
    live = discord_live
    stranger = live.fake.add_user("stranger", in_guild=False)
    refused = live.http.post("/messages/discord", json={"to": stranger.id, "message": "hi"})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_to_number", "to")
    assert "shares no server" in error["message"]
    unknown = live.http.post(
        "/messages/discord", json={"to": "123456789012345678", "message": "hi"}
    )
    assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "to"
    assert (
        live.http.post("/messages/discord", json={"to": "ada", "message": "hi"}).status_code == 400
    )


# -- approvals ----------------------------------------------------------------------------
def _approve(live: DiscordLive, **body: Any) -> httpx.Response:
    return live.http.post(
        "/approvals",
        json={
            "title": "Restart the API?",
            "action": ACTION,
            "approvers": [{"channel": "discord", "to": live.ada.id}],
            **body,
        },
    )


def test_an_approver_decides_by_button_and_the_message_shows_it(discord_live: DiscordLive) -> None:
    live = discord_live
    asking, answer = _in_background(lambda: _approve(live, waitTime=30))
    asked = live.posted(live.ada)
    ids = asked.custom_ids()
    assert [i.rsplit(":", 1)[1] for i in ids] == ["approve", "reject"]
    clicked = live.fake.click(asked, ids[0], live.ada)
    assert clicked.json()["type"] == 7  # UPDATE_MESSAGE, in the response
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["decision"] == "approved"
    assert answer["decisions"][0]["via"] == "discord_button"
    assert "Approved" in asked.content and asked.components == []
    [interaction] = live.fake.state.interactions
    assert interaction.elapsed is not None and interaction.elapsed < 3
    _clean(live)


def test_a_click_is_taken_once_and_only_from_an_approver(discord_live: DiscordLive) -> None:
    live = discord_live
    accepted = _approve(live, followUpTime=60).json()
    interaction_id = accepted["interactionId"]
    asked = live.posted(live.ada)
    approve = custom_id(interaction_id, "approve")
    eve = live.fake.add_user("eve")
    # Eve is no approver: told so, nothing decided.
    copy = live.fake.state.create_message(
        asked.channel_id, {"content": asked.content, "components": asked.components}
    )
    refused = live.fake.click(copy, approve, eve)
    assert "not yours" in refused.json()["data"]["content"]
    assert live.http.get(f"/approvals/{interaction_id}").json()["decisions"] == []
    # Ada's click, then the same interaction sent again (a replay): taken once.
    first = live.fake.sender._click(asked, custom_id(interaction_id, "reject"), live.ada)
    with httpx.Client(timeout=10) as client:
        url = live.fake.interactions_url or ""
        taken = client.post(url, content=first.body, headers=first.headers)
        again = client.post(url, content=first.body, headers=first.headers)
    assert taken.status_code == 200 and taken.json()["type"] == 7
    assert again.status_code == 403 and again.json()["error"]["code"] == "forbidden"
    _until(lambda: live.http.get(f"/approvals/{interaction_id}").json()["status"] == "ended")
    status = live.http.get(f"/approvals/{interaction_id}").json()
    assert status["decision"] == "rejected" and len(status["decisions"]) == 1
    # Another click on a copy of the buttons: the approval is closed, nothing more counts.
    later = live.fake.click(copy, approve, live.ada)
    assert later.status_code == 200
    assert len(live.http.get(f"/approvals/{interaction_id}").json()["decisions"]) == 1


# -- forms --------------------------------------------------------------------------------
FIELDS: list[dict[str, Any]] = [
    {"id": "city", "type": "text", "label": "City", "required": True},
    {"id": "notes", "type": "textarea", "label": "Notes"},
]


def _form(live: DiscordLive, fields: list[dict[str, Any]]) -> httpx.Response:
    return live.http.post(
        "/forms/discord",
        json={
            "to": live.ada.id,
            "title": "Shipping",
            "fields": fields,
            "message": "Where to? {{url}}",
            "waitTime": 30,
        },
    )


def test_a_form_that_fits_is_filled_in_a_modal(discord_live: DiscordLive) -> None:
    live = discord_live
    sending, answer = _in_background(lambda: _form(live, FIELDS))
    asked = live.posted(live.ada)
    [fill] = asked.custom_ids()  # the page is http here: no link button (Discord needs https)
    assert fill.endswith(":form") and "/f/" in asked.content
    live.fake.click(asked, fill, live.ada)
    modal = live.modal()
    assert modal.title == "Shipping"
    assert [(i["custom_id"], i["label"], i["style"]) for i in modal.inputs] == [
        ("city", "City", 1),
        ("notes", "Notes", 2),
    ]
    # Required and empty: refused by the form's rules, told to the person alone.
    refused = live.fake.submit(modal, {"city": " "}, live.ada)
    assert refused.json()["type"] == 4 and refused.json()["data"]["flags"] == 64
    live.fake.click(asked, fill, live.ada)
    done = live.fake.submit(live.modal(2), {"city": "Lyon", "notes": ""}, live.ada)
    assert done.json()["type"] == 7
    sending.join(30)
    assert answer["status_code"] == 200, answer
    assert answer["responded"] is True and answer["values"]["city"] == "Lyon"
    assert "Submitted" in asked.content and asked.components == []
    _clean(live)


def test_a_form_too_big_for_a_modal_goes_out_as_its_pages_link(discord_live: DiscordLive) -> None:
    live = discord_live
    fields = [{"id": f"f{i}", "type": "text", "label": f"Field {i}"} for i in range(6)]
    sending, answer = _in_background(lambda: _form(live, fields))
    asked = live.posted(live.ada)
    assert asked.custom_ids() == []
    url = asked.content.removeprefix("Where to? ")
    assert "/f/" in url, asked.content
    submitted = httpx.post(url, json={"values": {"f0": "x"}})
    assert submitted.status_code == 200, submitted.text
    sending.join(30)
    assert answer["status_code"] == 200 and answer["values"]["f0"] == "x"
    _clean(live)


def test_what_fits_a_modal() -> None:
    def form(**changes: Any) -> Form:
        field = {"id": "a", "type": "text", "label": "A", **changes}
        return Form.model_validate({"title": "T" * 60, "fields": [field], "waitTime": 10})

    modal = form_modal(form(), "hw:x:form")
    assert modal is not None and len(modal["title"]) == 45  # Discord's limit
    assert form_modal(form(label="L" * 46), "c") is None
    assert form_modal(form(type="select", options=[{"label": "x", "value": "x"}]), "c") is None
    assert form_modal(form(type="checkbox"), "c") is None
    many = Form.model_validate(
        {
            "title": "T",
            "fields": [{"id": f"f{i}", "type": "text", "label": "L"} for i in range(6)],
            "waitTime": 10,
        }
    )
    assert form_modal(many, "c") is None
    with pytest.raises(ValueError, match="100"):
        custom_id("x" * 100, "approve")


# -- the endpoint -------------------------------------------------------------------------
def test_the_endpoint_refuses_what_it_cannot_verify_or_read(discord_live: DiscordLive) -> None:
    live = discord_live
    fake = live.fake
    assert fake.ping().json() == {"type": 1}
    body = json.dumps({"type": 3, "id": "1", "token": "t", "version": 1}).encode()
    now = str(int(time.time()))
    signed = fake.state.signing_key.sign(now.encode() + body).hex()
    forgeries = [
        {"signature": "00" * 64},
        {"signature": ""},
        {"signature": "zz" * 64},
        {"signature": signed, "timestamp": str(int(now) + 1)},  # signed over another time
        # upper case, its last byte changed (to one it is not: "00" would be the signature
        # itself once in 256 runs)
        {"signature": signed.upper()[:-2] + ("01" if signed.endswith("00") else "00")},
        {"timestamp": str(int(time.time()) - 3600)},  # too old: a replay
        {"timestamp": "+" + now},
    ]
    for forged in forgeries:
        refused = fake.post_signed(body, **forged)
        assert refused.status_code == 401, (forged, refused.text)
        assert refused.json()["error"]["code"] == "unauthorized"
    with httpx.Client(timeout=10) as client:
        unsigned = client.post(f"{live.base_url}/providers/discord/interactions", content=body)
    assert unsigned.status_code == 401
    for garbage in (
        b"",
        b"{",
        b"[]",
        b"null",
        b'{"type": 9}',
        b'{"type": "1"}',
        b'{"type": 3}',
        b'{"type": 3, "id": "1", "token": "t", "user": {"id": "5"}}',
        b'{"type": 9, "id": "1", "token": "t", "user": {"id": "5"}}',
        b'{"type": 5, "id": "1", "token": "t", "user": {"id": "5"}, "data": {"custom_id": "x"}}',
        b"\xff",
    ):
        refused = fake.post_signed(garbage)
        assert refused.status_code == 400, (garbage, refused.text)
        assert refused.json()["error"]["code"] == "invalid_request"
    foreign = json.dumps(
        {"type": 3, "id": "2", "token": "t", "user": {"id": "5"}, "data": {"custom_id": "x"}}
    ).encode()
    assert fake.post_signed(foreign).json()["data"]["flags"] == 64  # not ours: said privately


def test_discord_settings_from_the_file_and_the_environment(tmp_path: Any) -> None:
    path = tmp_path / "humanwire.toml"
    path.write_text(
        'public_url = "https://hw.example.com"\n[discord]\napplication_id = "1234567890123"\n'
        f'public_key = "{"ab" * 32}"\n'
    )
    token = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GabcDE.abcdefghijklmnopqrstuvwxyz012"
    env = {"HUMANWIRE_DISCORD_BOT_TOKEN": token}
    config = load_settings(path, env, {}).to_service_config()
    assert config.discord is not None and config.discord.application_id == "1234567890123"
    assert config.discord.bot_token.startswith("MTIz")
    with pytest.raises(Exception, match=r"discord\.bot_token"):
        load_settings(path, {}, {})
    path.write_text('[discord]\npublic_key = "nothex"\n')
    with pytest.raises(Exception, match="64 hex"):
        load_settings(path, {}, {})


def test_readyz_reports_the_token_and_a_public_key_not_the_applications(
    fake_discord: DiscordFakeServer,
) -> None:
    config = discord_config(fake_discord)
    for public_key, ok, detail in (
        (config.public_key, True, "accepted"),
        ("ab" * 32, False, "public_key"),
    ):
        runner = ServiceRunner(
            replace(fast_config(":memory:"), discord=replace(config, public_key=public_key))
        )
        runner.start()
        try:
            check = httpx.get(f"{runner.base_url}/readyz").json()["checks"]["discord"]
        finally:
            runner.stop()
        assert check["ok"] is ok and detail in check["detail"], check


async def test_work_past_the_budget_is_acknowledged_then_answered_through_the_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Discord drops an interaction not answered within 3 s: slow work is acknowledged
    (type 6) in time, and its answer follows through the interaction's token."""
    from humanwire.server.config import DiscordConfig
    from humanwire.server.delivery.discord import provider as module

    monkeypatch.setattr(module, "ANSWER_BUDGET", 0.05)
    sent: list[tuple[str, str, Any]] = []

    class Recorder:
        async def request(self, route: Any, json: Any = None) -> None:
            sent.append((route.method, route.path, json))

        async def close(self) -> None:
            """The provider closes its client."""

    config = DiscordConfig(bot_token="t", application_id="42", public_key="ab" * 32)
    provider = module.DiscordProvider(config, inbound=None, public_url="http://x")  # type: ignore[arg-type]
    provider._http, provider.bot_id = Recorder(), "1"  # type: ignore[assignment]

    async def slow() -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return module._updated("Restart?", "✅ Approved")

    payload = {"id": "9", "token": "tok"}
    assert await provider._within_budget(payload, slow()) == {"type": 6}
    assert sent == []
    await asyncio.sleep(0.4)
    [(method, path, body)] = sent
    assert (method, path) == ("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/@original")
    assert body["content"].endswith("✅ Approved") and body["components"] == []
    fast = await provider._within_budget(payload, asyncio.sleep(0, {"type": 4, "data": {}}))
    assert fast["type"] == 4
    await provider.aclose()


def test_a_channel_card_of_type_discord_asks_with_its_reply_button(
    discord_live: DiscordLive,
) -> None:
    live = discord_live
    made = live.http.post(
        "/channels",
        json={
            "type": "discord",
            "to": live.ada.id,
            "waitTime": 30,
            "messageTemplate": "Q: {{message}}",
        },
    )
    assert made.status_code == 201, made.text
    card = made.json()["id"]
    asking, answer = _in_background(
        lambda: live.http.post(f"/messages/{card}", json={"message": "Ship it?"})
    )
    asked = live.posted(live.ada)
    assert asked.content == "Q: Ship it?"
    [reply] = asked.custom_ids()
    live.fake.click(asked, reply, live.ada)
    modal = live.modal()
    live.fake.submit(modal, {modal.inputs[0]["custom_id"]: "shipped"}, live.ada)
    asking.join(30)
    assert answer["status_code"] == 200, answer
    assert (answer["responded"], answer["reply"]) == (True, "shipped")
    bad = live.http.post("/channels", json={"type": "discord", "to": "ada", "waitTime": 30})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "to", bad.text
    _clean(live)
