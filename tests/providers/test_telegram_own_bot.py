"""An account's own Telegram bot (``/telegram/bots``) through the real provider
(python-telegram-bot) against the Telegram contract fake with several bots, on loopback
and on both stores: registering checks the token with ``getMe`` and points the bot's
webhook at its own URL with its own secret (the token never shown again); the account's
start links open its bot, its asks and approvals go out from it and are answered there;
what one account's bot receives never reaches another account; the per-bot webhook
refuses a wrong secret (403) and a deleted bot (404), never 500; deleting the bot removes
its webhook and sends go from the shared bot again."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from telegram_support import SECRET, TelegramLive

from humanwire.server.engine.people import START_BOUND, START_NOT_VALID
from humanwire.testing.telegram import FakeBot

pytest.importorskip("telegram")

ACTION = {"name": "restart", "arguments": {"service": "api"}}


def _register(live: TelegramLive, bot: FakeBot, http: httpx.Client | None = None) -> Any:
    answered = (http or live.http).post("/telegram/bots", json={"token": bot.token})
    assert answered.status_code == 201, answered.text
    return answered.json()


def _status(http: httpx.Client, interaction_id: str) -> dict[str, Any]:
    found: dict[str, Any] = http.get(f"/interactions/{interaction_id}/status").json()
    return found


def _until(check: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(0.05)


def _reply(http: httpx.Client, interaction_id: str) -> str | None:
    """The answer of an ask, once it ended (None: still open after a while)."""
    status: dict[str, Any] = _until(
        lambda: (s := _status(http, interaction_id))["status"] == "ended" and s
    ) or _status(http, interaction_id)
    if status["status"] != "ended":
        return None
    return str(status["result"]["payload"]["body"])


def _update(chat: int, text: str, update_id: int = 5_000_001) -> bytes:
    return json.dumps(
        {
            "update_id": update_id,
            "message": {
                "message_id": 1,
                "date": int(time.time()),
                "chat": {"id": chat, "type": "private", "first_name": "Ada"},
                "from": {"id": chat, "is_bot": False, "first_name": "Ada"},
                "text": text,
            },
        }
    ).encode()


def test_registering_checks_the_token_sets_the_webhook_and_never_shows_the_token(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    own = live.fake.add_bot("acme_ops_bot")
    body = _register(live, own)
    url = f"{live.base_url}/providers/telegram/bots/{own.bot_id}/updates"
    assert body["botId"] == str(own.bot_id) and body["username"] == "acme_ops_bot"
    assert body["webhookUrl"] == url and body["createdAt"]
    assert body["tokenHint"] == f"{own.bot_id}:…{own.token[-4:]}"
    assert own.token not in json.dumps(body) and "token" not in body
    # The bot's webhook points at its own URL, with a secret of its own.
    assert own.webhook_url == url
    assert own.secret_token and own.secret_token not in (SECRET, live.fake.secret_token)
    listed = live.http.get("/telegram/bots")
    assert listed.status_code == 200 and listed.json() == [body]
    assert own.token.split(":", 1)[1] not in listed.text
    # Registering it again (a new token for the same bot, say) keeps the one bot.
    assert _register(live, own)["botId"] == body["botId"]
    assert len(live.http.get("/telegram/bots").json()) == 1
    # Another account sees nothing of it.
    other = live.account("other")
    assert other.get("/telegram/bots").json() == []
    # Nothing of the token is in the stored state as it was given.
    states = live.runner.call(live.runner.engine.runtime.store.provider_states, "telegram-bot")
    assert [key for key, _ in states] == [str(own.bot_id)]
    assert own.token not in json.dumps(states)
    live.fake.wait_idle()
    assert live.fake.violations == [] and live.fake.errors == []


def test_tokens_that_cannot_be_registered_are_refused_naming_the_field(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    for token in ("", "not-a-token", "123:short", f"abc:{'x' * 35}", 42, None):
        refused = live.http.post("/telegram/bots", json={"token": token})
        assert refused.status_code == 400, (token, refused.text)
        assert refused.json()["error"]["field"] == "token", refused.text
    assert live.http.post("/telegram/bots", json={}).json()["error"]["field"] == "token"
    # A token of the right shape that Telegram does not know: getMe answers 401.
    unknown = live.http.post("/telegram/bots", json={"token": f"123456789:{'A' * 35}"})
    assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "token"
    assert "getMe" in unknown.json()["error"]["message"]
    # A revoked one the same.
    revoked = live.fake.add_bot("revoked_bot")
    live.fake.revoke_bot(revoked)
    refused = live.http.post("/telegram/bots", json={"token": revoked.token})
    assert refused.status_code == 400 and refused.json()["error"]["field"] == "token"
    # The shared bot is not anyone's own.
    shared = live.http.post("/telegram/bots", json={"token": live.fake.token})
    assert shared.status_code == 400 and shared.json()["error"]["field"] == "token"
    assert live.fake.webhook_url.endswith("/providers/telegram/updates")  # untouched
    # One bot per account; a bot is one account's.
    first, second = live.fake.add_bot("first_bot"), live.fake.add_bot("second_bot")
    _register(live, first)
    again = live.http.post("/telegram/bots", json={"token": second.token})
    assert again.status_code == 409 and again.json()["error"]["field"] == "token"
    taken = live.account("other").post("/telegram/bots", json={"token": first.token})
    assert taken.status_code == 409, taken.text
    assert second.webhook_url == "" and revoked.webhook_url == ""  # nothing set for those
    assert [b["botId"] for b in live.http.get("/telegram/bots").json()] == [str(first.bot_id)]
    assert live.fake.violations == []


def test_the_start_link_opens_the_own_bot_and_binds_only_there(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    own = live.fake.add_bot("acme_ops_bot")
    _register(live, own)
    ada = live.fake.add_person("Ada", started=False)
    person = live.http.post("/people", json={"name": "Ada", "addresses": [{"channel": "telegram"}]})
    person_id = person.json()["personId"]
    confirm = live.http.post(f"/people/{person_id}/confirm", json={"channel": "telegram"})
    assert confirm.status_code == 200, confirm.text
    link = urlsplit(confirm.json()["startLink"])
    assert (link.netloc, link.path) == ("t.me", "/acme_ops_bot")
    (token,) = parse_qs(link.query)["start"]
    # Opened at the shared bot, it binds nothing: the own bot is the one that will write.
    live.fake.start(ada, token)
    assert live.sent(ada).text == START_NOT_VALID
    address = live.http.get(f"/people/{person_id}").json()["addresses"][0]
    assert address["confirmed"] is False
    # At the own bot, it does; and the bot said so there.
    live.fake.start(ada, token, bot=own)
    live.fake.wait_for(lambda: live.fake.sent_to(ada, bot=own))
    assert live.fake.sent_to(ada, bot=own)[0].text == START_BOUND
    address = live.http.get(f"/people/{person_id}").json()["addresses"][0]
    assert (address["to"], address["confirmed"]) == (str(ada), True)
    # An ask to the person goes out from the own bot (Ada never started the shared one).
    asked = live.http.post(
        "/messages/telegram", json={"person": person_id, "message": "Ship?", "followUpTime": 60}
    )
    assert asked.status_code == 200, asked.text
    live.fake.wait_for(lambda: len(live.fake.sent_to(ada, bot=own)) >= 2)
    message = live.fake.sent_to(ada, bot=own)[1]
    assert message.text == "Ship?"
    live.fake.send(ada, "ship it", reply_to=message)
    assert _reply(live.http, asked.json()["interactionId"]) == "ship it"
    live.fake.wait_idle()
    assert live.fake.violations == [] and live.fake.errors == []


def test_asks_and_approvals_go_out_from_the_own_bot_and_are_answered_there(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    own = live.fake.add_bot("acme_ops_bot")
    _register(live, own)
    asked = live.ask(message="Deploy?", followUpTime=60)
    assert asked.status_code == 200, asked.text
    message = live.fake.wait_for(lambda: live.fake.sent_to(live.ada, bot=own))[0]
    assert message.text == "Deploy?" and live.fake.sent_to(live.ada) == []
    live.fake.send(live.ada, "go ahead", bot=own)  # the next message in the chat
    assert _reply(live.http, asked.json()["interactionId"]) == "go ahead"
    # An approval: buttons on the own bot's message, the press answered and shown there.
    approval = live.http.post(
        "/approvals",
        json={
            "title": "Restart the API?",
            "action": ACTION,
            "approvers": [{"channel": "telegram", "to": str(live.ada)}],
            "followUpTime": 60,
        },
    )
    assert approval.status_code in (200, 202), approval.text
    request = live.fake.wait_for(
        lambda: [m for m in live.fake.sent_to(live.ada, bot=own) if m.buttons]
    )[0]
    approve = next(b["callback_data"] for b in request.buttons if "approve" in b["callback_data"])
    query = live.fake.click(request, approve)
    live.fake.wait_for(lambda: live.fake.callbacks[query]["answered"])
    assert "Recorded" in live.fake.callbacks[query]["text"]
    live.fake.wait_for(lambda: request.edits)
    assert "Approved" in request.text and request.reply_markup is None
    decided = _until(
        lambda: (
            (a := live.http.get(f"/approvals/{approval.json()['interactionId']}").json())[
                "decision"
            ]
            == "approved"
            and a
        )
    )
    assert decided and decided["decisions"][0]["via"] == "telegram_button"
    assert live.fake.sent_to(live.ada) == []  # nothing from the shared bot
    live.fake.wait_idle()
    assert live.fake.violations == [] and live.fake.errors == []


def test_what_one_accounts_bot_receives_never_reaches_another(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    alpha_bot, beta_bot = live.fake.add_bot("alpha_bot"), live.fake.add_bot("beta_bot")
    beta = live.account("beta")
    _register(live, alpha_bot)
    _register(live, beta_bot, beta)
    # Both ask Ada, each from its own bot: each bot's first message in her chat is its
    # message 1 (a chat's ids are per bot).
    a = live.ask(message="Alpha asks", followUpTime=60).json()
    b = live.ask(beta, message="Beta asks", followUpTime=60).json()
    a_msg = live.fake.wait_for(lambda: live.fake.sent_to(live.ada, bot=alpha_bot))[0]
    b_msg = live.fake.wait_for(lambda: live.fake.sent_to(live.ada, bot=beta_bot))[0]
    assert a_msg.message_id == b_msg.message_id
    # A reply to beta's message in beta's chat answers beta's ask only.
    live.fake.send(live.ada, "for beta", reply_to=b_msg)
    assert _reply(beta, b["interactionId"]) == "for beta"
    assert _status(live.http, a["interactionId"])["status"] == "pending"
    # The next message in alpha's chat answers alpha's.
    live.fake.send(live.ada, "for alpha", bot=alpha_bot)
    assert _reply(live.http, a["interactionId"]) == "for alpha"
    # Unsolicited messages: each account gets what its own bot received, nothing else.
    live.fake.send(live.ada, "hello alpha", bot=alpha_bot)
    live.fake.send(live.ada, "hello beta", bot=beta_bot)
    live.fake.wait_idle()

    def received(http: httpx.Client) -> list[str]:
        """The account's messages that answered nothing (its ``message.received``)."""
        key = http.headers["Authorization"].removeprefix("Bearer ")
        account = live.runner.call(live.runner.engine.accounts.authenticate, key)
        found = live.runner.call(live.runner.engine.runtime.store.list_inbound, account.id, 50)
        return sorted(r.body for r in found if r.interaction_id is None)

    assert _until(lambda: received(live.http) == ["hello alpha"]), received(live.http)
    assert _until(lambda: received(beta) == ["hello beta"]), received(beta)
    # An approval of alpha's cannot be decided through beta's bot, even by its approver.
    approval = live.http.post(
        "/approvals",
        json={
            "title": "Restart?",
            "action": ACTION,
            "approvers": [{"channel": "telegram", "to": str(live.ada)}],
            "followUpTime": 60,
        },
    ).json()
    forged = live.fake._add(
        live.ada,
        "Restart?",
        from_bot=True,
        reply_markup={
            "inline_keyboard": [
                [{"text": "Approve", "callback_data": f"hw:{approval['interactionId']}:approve"}]
            ]
        },
        bot=beta_bot,
    )
    query = live.fake.click(forged, f"hw:{approval['interactionId']}:approve")
    live.fake.wait_for(lambda: live.fake.callbacks[query]["answered"])
    assert "not yours" in live.fake.callbacks[query]["text"]
    found = live.http.get(f"/approvals/{approval['interactionId']}").json()
    assert found["status"] == "pending" and not found.get("decisions")
    assert live.fake.violations == [] and live.fake.errors == []


def test_the_bots_webhook_refuses_what_it_cannot_verify_and_a_deleted_bot(
    telegram_live: TelegramLive,
) -> None:
    live = telegram_live
    alpha_bot, beta_bot = live.fake.add_bot("alpha_bot"), live.fake.add_bot("beta_bot")
    _register(live, alpha_bot)
    _register(live, beta_bot, live.account("beta"))
    url = f"{live.base_url}/providers/telegram/bots/{alpha_bot.bot_id}/updates"
    body = _update(live.ada, "hello")
    good = str(alpha_bot.secret_token)
    for secret in (None, "", "wrong", SECRET, beta_bot.secret_token, good[:-1], good + "x"):
        refused = live.fake.post_update(url, body, secret=secret)
        assert refused.status_code == 403, (secret, refused.text)
        assert refused.json()["error"]["code"] == "forbidden"
    for path in ("123", "not-a-bot", "7000000000" + "0" * 30, "%00"):
        refused = live.fake.post_update(
            f"{live.base_url}/providers/telegram/bots/{path}/updates", body, secret=SECRET
        )
        assert refused.status_code in (403, 404), (path, refused.text)
    # The right secret, garbage bodies: 400.
    for garbage in (b"", b"{", b"[]", json.dumps({"update_id": "x"}).encode()):
        refused = live.fake.post_update(url, garbage, secret=good)
        assert refused.status_code == 400, (garbage, refused.text)
    assert live.fake.post_update(url, body, secret=good).status_code == 200
    # Deleted: its webhook removed at Telegram; what still arrives with its secret is 404.
    deleted = live.http.delete(f"/telegram/bots/{alpha_bot.bot_id}")
    assert deleted.status_code == 204, deleted.text
    assert alpha_bot.webhook_url == "" and alpha_bot.secret_token is None
    late = live.fake.post_update(url, _update(live.ada, "late", 5_000_002), secret=good)
    assert late.status_code == 404 and late.json()["error"]["code"] == "not_found"
    assert beta_bot.webhook_url  # the other account's bot is untouched


def test_deleting_the_bot_sends_from_the_shared_bot_again(telegram_live: TelegramLive) -> None:
    live = telegram_live
    own = live.fake.add_bot("acme_ops_bot")
    other = live.account("other")
    _register(live, own)
    # Another account cannot delete it; an unknown id is 404 too.
    assert other.delete(f"/telegram/bots/{own.bot_id}").status_code == 404
    for unknown in ("123456789", "%00", "x" * 300, "%C3%BC", "-1"):
        assert live.http.delete(f"/telegram/bots/{unknown}").status_code == 404, unknown
    assert own.webhook_url
    assert live.http.delete(f"/telegram/bots/{own.bot_id}").status_code == 204
    assert live.http.get("/telegram/bots").json() == []
    assert live.http.delete(f"/telegram/bots/{own.bot_id}").status_code == 404
    assert live.ask(message="From the shared bot?", followUpTime=60).status_code == 200
    assert live.fake.wait_for(lambda: live.fake.sent_to(live.ada))[0].text == (
        "From the shared bot?"
    )
    assert live.fake.sent_to(live.ada, bot=own) == []
    assert [name for bot, name, _ in live.fake.calls if bot == own.bot_id][-1] == ("deleteWebhook")
    live.fake.wait_idle()
    assert live.fake.violations == [] and live.fake.errors == []


def test_each_own_bots_webhook_is_set_again_at_start_a_failing_one_logged(
    telegram_live: TelegramLive, caplog: pytest.LogCaptureFixture
) -> None:
    live = telegram_live
    revoked, kept = live.fake.add_bot("revoked_ops_bot"), live.fake.add_bot("kept_ops_bot")
    _register(live, revoked)  # registered first: tried first at the next start
    other = live.account("other")
    _register(live, kept, other)
    other.close()
    live.fake.revoke_bot(revoked)
    with live.fake.lock:
        kept.webhook_url, kept.secret_token = "", None  # pointed elsewhere meanwhile
        seen = len(live.fake.calls)
    caplog.set_level("WARNING", logger="humanwire.telegram")
    live.runner.stop()
    live.runner.start()  # the same store (a new engine and app, a new port)
    live.http.base_url = httpx.URL(live.base_url)
    url = f"{live.base_url}/providers/telegram/bots/{kept.bot_id}/updates"
    live.fake.wait_for(lambda: kept.webhook_url == url or None)
    assert kept.secret_token and kept.secret_token not in (SECRET, live.fake.secret_token)
    with live.fake.lock:
        again = [
            (bot, values) for bot, name, values in live.fake.calls[seen:] if name == "setWebhook"
        ]
    # The revoked bot was tried (Telegram answered 401) and did not stop the other.
    assert {bot for bot, _ in again} >= {revoked.bot_id, kept.bot_id, live.fake.bot_id}
    assert [v["url"] for bot, v in again if bot == kept.bot_id] == [url]
    assert live.runner.running and live.http.get("/healthz").status_code == 200
    live.fake.wait_for(
        lambda: any(str(revoked.bot_id) in r.getMessage() for r in caplog.records) or None
    )
    # What people write to the kept bot reaches its account at the new address.
    live.fake.send(live.ada, "hello again", bot=kept)
    live.fake.wait_idle()
    assert [d.acknowledged for d in live.fake.deliveries if d.bot_id == kept.bot_id] == [True]
    assert live.fake.violations == [] and live.fake.errors == []
