"""The inbox and reply pages over real HTTP (no browser): authentication, CSRF, account
isolation, escaping, the live stream."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from humanwire import HumanWire
from humanwire.testing.service import RunningService, fast_config, start_test_service

HUMAN = "+12025550100"


@pytest.fixture
def browser_like(humanwire_service: RunningService) -> Iterator[httpx.Client]:
    """A cookie-keeping client, as a browser is."""
    with httpx.Client(base_url=humanwire_service.base_url) as client:
        yield client


def login(client: httpx.Client, key: str) -> str:
    """Logs in through ``?key=``; returns the CSRF token the page's forms carry."""
    response = client.get(f"/inbox?key={key}")
    assert response.status_code == 303
    assert response.headers["location"] == "/inbox"
    page = client.get("/inbox")
    assert page.status_code == 200
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


def test_inbox_needs_the_key(humanwire_service: RunningService, humanwire_api_key: str) -> None:
    base = humanwire_service.base_url
    anonymous = httpx.get(f"{base}/inbox")
    assert anonymous.status_code == 303
    assert anonymous.headers["location"] == "/inbox/login?next=%2Finbox"
    wrong = httpx.get(f"{base}/inbox", headers={"Authorization": "Bearer hw_nope"})
    assert wrong.status_code == 401
    assert httpx.get(f"{base}/inbox?key=hw_nope").status_code == 401
    bearer = httpx.get(f"{base}/inbox", headers={"Authorization": f"Bearer {humanwire_api_key}"})
    assert bearer.status_code == 200 and "What your agents sent" in bearer.text
    for path in ("/inbox/events", "/inbox/channels"):
        assert httpx.get(base + path).status_code == 303, path
    for path in ("/inbox/reply", "/inbox/text", "/inbox/channels", "/inbox/inbound-call"):
        assert httpx.post(base + path, data={"body": "x"}).status_code == 401, path


def test_session_cookie_is_httponly_strict_and_the_key_dropped_from_the_url(
    browser_like: httpx.Client, humanwire_api_key: str
) -> None:
    response = browser_like.get(f"/inbox/channels?key={humanwire_api_key}&x=1")
    assert response.status_code == 303
    assert response.headers["location"] == "/inbox/channels?x=1"
    cookies = response.headers.get_list("set-cookie")
    session_cookie = next(c for c in cookies if c.startswith("hw_inbox_session="))
    assert "HttpOnly" in session_cookie and "SameSite=strict" in session_cookie
    assert "Path=/inbox" in session_cookie
    assert not any(humanwire_api_key in cookie for cookie in cookies)


def test_login_form_and_safe_next(browser_like: httpx.Client, humanwire_api_key: str) -> None:
    # Not logged in: the form itself (a logged-in person is sent on to ``next``).
    form = browser_like.get("/inbox/login", params={"next": "/inbox/channels"})
    assert form.status_code == 200 and 'name="key"' in form.text
    refused = browser_like.post("/inbox/login", data={"key": "hw_wrong"})
    assert refused.status_code == 401 and "That API key is not valid." in refused.text
    response = browser_like.post(
        "/inbox/login", data={"key": humanwire_api_key, "next": "https://evil.example/"}
    )
    assert response.status_code == 303 and response.headers["location"] == "/inbox"
    response = browser_like.post(
        "/inbox/login", data={"key": humanwire_api_key, "next": "/inbox/channels"}
    )
    assert response.headers["location"] == "/inbox/channels"


def test_actions_need_the_csrf_token(
    browser_like: httpx.Client, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    csrf = login(browser_like, humanwire_api_key)
    text = {"channel": "sms", "from": HUMAN, "to": "", "body": "hello"}
    forged = browser_like.post("/inbox/text", data=text)
    assert forged.status_code == 403
    forged = browser_like.post("/inbox/text", data=text | {"csrf": "not-it"})
    assert forged.status_code == 403
    accepted = browser_like.post("/inbox/text", data=text | {"csrf": csrf})
    assert accepted.status_code == 303
    page = browser_like.get("/inbox").text
    assert "Text sent to" in page
    assert "hello" in page
    # The notice shows once.
    assert "Text sent to" not in browser_like.get("/inbox").text


def test_bearer_actions_need_no_csrf(
    humanwire_service: RunningService, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    response = httpx.post(
        f"{humanwire_service.base_url}/inbox/text",
        data={"channel": "whatsapp", "from": HUMAN, "body": "via bearer"},
        headers={"Authorization": f"Bearer {humanwire_api_key}"},
    )
    assert response.status_code == 303


def test_accounts_never_see_each_other(
    humanwire_service: RunningService, humanwire_client: HumanWire, humanwire_api_key: str
) -> None:
    humanwire_client.messages.sms(to=HUMAN, message="secret of account A <b>")
    call = humanwire_client.calls.create(to=HUMAN, prompt="A's call")
    card = humanwire_client.channels.create(type="sms", to=HUMAN, wait_time=30)
    other_key = humanwire_service.create_account("B")
    with httpx.Client(base_url=humanwire_service.base_url) as other:
        csrf = login(other, other_key)
        page = other.get("/inbox").text
        assert "secret of account A" not in page and "A&#x27;s call" not in page
        # B cannot end A's call through the inbox either: a 404, as on the API.
        response = other.post(
            f"/inbox/calls/{call.interaction_id}",
            data={"csrf": csrf, "outcome": "completed", "summary": "hijack"},
        )
        assert response.status_code == 404 and "no interaction" in response.text
        # Nor delete A's channel card.
        deleted = other.post(f"/inbox/channels/{card.id}/delete", data={"csrf": csrf})
        assert deleted.status_code == 404
    assert humanwire_client.interactions.status(call.interaction_id).status == "pending"
    assert [c.id for c in humanwire_client.channels.list()] == [card.id]
    with httpx.Client(base_url=humanwire_service.base_url) as mine:
        login(mine, humanwire_api_key)
        page = mine.get("/inbox").text
        assert "secret of account A &lt;b&gt;" in page


def test_failed_action_is_reported(
    browser_like: httpx.Client, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    csrf = login(browser_like, humanwire_api_key)
    response = browser_like.post(
        "/inbox/inbound-call",
        data={"csrf": csrf, "from": HUMAN, "to": "+12025550155", "summary": "hi"},
    )
    assert response.status_code == 303
    page = browser_like.get("/inbox").text
    assert 'class="flash bad"' in page


def test_live_stream_reports_changes(
    humanwire_service: RunningService, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    headers = {"Authorization": f"Bearer {humanwire_api_key}"}
    received: list[str] = []
    connected = threading.Event()

    def listen() -> None:
        with httpx.stream(
            "GET", f"{humanwire_service.base_url}/inbox/events", headers=headers, timeout=10
        ) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for line in stream.iter_lines():
                if line.startswith(": connected"):
                    connected.set()
                if line.startswith("event: change"):
                    received.append(line)
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert connected.wait(5)
    humanwire_client.messages.sms(to=HUMAN, message="ping")
    listener.join(5)
    assert received == ["event: change"]


def test_reply_page(
    humanwire_service: RunningService, humanwire_client: HumanWire, humanwire_api_key: str
) -> None:
    card = humanwire_client.channels.create(
        type="sms", to=HUMAN, wait_time=20, follow_up_time=60, reply_link=True
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        held = pool.submit(humanwire_client.messages.channel, card.id, message="<b>Approve?</b>")
        link = _reply_link(humanwire_client)
        page = httpx.get(link)
        assert page.status_code == 200
        assert "&lt;b&gt;Approve?&lt;/b&gt;" in page.text and "<b>Approve" not in page.text
        inbox = httpx.get(
            f"{humanwire_service.base_url}/inbox",
            headers={"Authorization": f"Bearer {humanwire_api_key}"},
        ).text
        assert f'href="{link}"' in inbox and "Open the reply page" in inbox
        assert page.headers["referrer-policy"] == "no-referrer"
        empty = httpx.post(link, json={"body": "  "})
        assert empty.status_code == 400 and empty.json()["error"]["field"] == "body"
        assert httpx.post(link, json={"body": "x", "more": 1}).status_code == 400
        assert httpx.post(link, data={"body": ""}).status_code == 400
        answered = httpx.post(link, json={"body": "Yes <i>do it</i>"})
        assert answered.status_code == 200 and answered.json() == {"status": "replied"}
        assert held.result(timeout=10).response == "Human response: Yes <i>do it</i>"
    again = httpx.post(link, json={"body": "no"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    shown = httpx.get(link).text
    assert "Your reply was sent" in shown and "Yes &lt;i&gt;do it&lt;/i&gt;" in shown
    unknown = httpx.get(link.rsplit("/", 1)[0] + "/" + "y" * 43)
    assert unknown.status_code == 404


def test_reply_link_expires(humanwire_client: HumanWire) -> None:
    card = humanwire_client.channels.create(
        type="whatsapp", to=HUMAN, wait_time=1, follow_up_time=1, reply_link=True
    )
    response = humanwire_client.messages.channel(card.id, message="Quick one")
    assert response.responded is False
    link = _reply_link(humanwire_client)
    time.sleep(1.2)
    assert httpx.get(link).status_code == 410
    late = httpx.post(link, json={"body": "too late"})
    assert late.status_code == 410 and late.json()["error"]["code"] == "gone"


def _reply_link(client: HumanWire) -> str:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for delivery in client.sandbox.deliveries():
            found = re.search(r"https?://\S+/r/[A-Za-z0-9_-]+", delivery.text)
            if found:
                return found.group(0)
        time.sleep(0.05)
    raise AssertionError("no reply link delivered")


def test_without_the_sandbox_the_inbox_only_watches(database: str) -> None:
    """A service with real providers (sandbox off): the inbox shows what was sent and
    keeps the dashboard's job, but does not play the human."""
    config = fast_config(database)
    config.sandbox_enabled = False
    service = start_test_service(database, config)
    try:
        key = service.create_account("watch only")
        headers = {"Authorization": f"Bearer {key}"}
        with HumanWire(api_key=key, base_url=service.base_url) as client:
            client.calls.create(to=HUMAN, prompt="Ring ring")
        page = httpx.get(f"{service.base_url}/inbox", headers=headers).text
        assert "Ring ring" in page
        assert "Answer &amp; end call" not in page and "Write to the agent" not in page
        refused = httpx.post(
            f"{service.base_url}/inbox/text",
            data={"channel": "sms", "from": HUMAN, "body": "hi"},
            headers=headers,
        )
        assert refused.status_code == 404
        cards = httpx.get(f"{service.base_url}/inbox/channels", headers=headers)
        assert cards.status_code == 200 and "Create a channel card" in cards.text
    finally:
        service.stop()


def test_an_email_is_answered_from_the_inbox(
    browser_like: httpx.Client, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    login(browser_like, humanwire_api_key)  # the reply form carries the CSRF token
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(
            humanwire_client.messages.email,
            to="human@example.com",
            subject="Release",
            message="Ship it on Friday?",
            wait_time=10,
        )
        deadline = time.monotonic() + 10
        page = ""
        while "Reply by email" not in page and time.monotonic() < deadline:
            page = browser_like.get("/inbox").text
            time.sleep(0.1)
        form = re.search(
            r'<form method="post" action="/inbox/reply".*?</form>', page, flags=re.DOTALL
        )
        assert form is not None, page
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form[0]))
        assert fields["channel"] == "email" and fields["from"] == "human@example.com"
        assert fields["to"] == "agent@sandbox.humanwire.invalid" and fields["interactionId"]
        answered = browser_like.post("/inbox/reply", data=fields | {"body": "Yes, ship it."})
        assert answered.status_code == 303
        result = held.result(timeout=10)
    assert (result.responded, result.reply) == (True, "Yes, ship it.")
    assert fields["interactionId"] == result.interaction_id


def test_a_telegram_message_is_answered_from_the_inbox_as_a_reply_to_it(
    browser_like: httpx.Client, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    login(browser_like, humanwire_api_key)
    chat = "100000001"
    older = humanwire_client.messages.telegram(to=chat, message="First?", follow_up_time=60)
    newer = humanwire_client.messages.telegram(to=chat, message="Second?", follow_up_time=60)
    page = browser_like.get("/inbox").text
    # The human's line names their Telegram chat, and writing first defaults to it.
    assert f'data-human-telegram="{chat}"' in page and "telegram chat <span" in page
    forms = re.findall(
        r'<form method="post" action="/inbox/reply".*?</form>', page, flags=re.DOTALL
    )
    replies = [
        dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
        for form in forms
    ]
    [to_older] = [f for f in replies if f.get("interactionId") == older.interaction_id]
    assert (to_older["channel"], to_older["from"]) == ("telegram", chat)
    answered = browser_like.post("/inbox/reply", data=to_older | {"body": "about the first"})
    assert answered.status_code == 303
    # A reply to the older message answers it, though a newer one waits in the chat.
    assert humanwire_client.interactions.status(older.interaction_id).status == "ended"
    assert humanwire_client.interactions.status(newer.interaction_id).status == "pending"


def test_a_teams_message_is_answered_from_the_inbox_as_the_persons_next_message(
    browser_like: httpx.Client, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    login(browser_like, humanwire_api_key)
    user = "29:humanwire-inbox-human"
    asked = humanwire_client.messages.teams(to=user, message="Ship?", follow_up_time=60)
    page = browser_like.get("/inbox").text
    # The human's line names their Teams user, and writing first defaults to it.
    assert f'data-human-teams="{user}"' in page and "teams user <span" in page
    forms = re.findall(
        r'<form method="post" action="/inbox/reply".*?</form>', page, flags=re.DOTALL
    )
    replies = [
        dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
        for form in forms
    ]
    [reply] = [f for f in replies if f.get("interactionId") == asked.interaction_id]
    assert (reply["channel"], reply["from"]) == ("teams", user)
    answered = browser_like.post("/inbox/reply", data=reply | {"body": "ship it"})
    assert answered.status_code == 303
    status = humanwire_client.interactions.status(asked.interaction_id)
    assert status.status == "ended" and "ship it" in str(status.result)


def test_a_discord_message_is_answered_from_the_inbox_as_its_reply(
    browser_like: httpx.Client, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    login(browser_like, humanwire_api_key)
    user = "1100000000000000100"
    older = humanwire_client.messages.discord(to=user, message="First?", follow_up_time=60)
    asked = humanwire_client.messages.discord(to=user, message="Ship?", follow_up_time=60)
    page = browser_like.get("/inbox").text
    # The human's line names their Discord user, and writing first defaults to it.
    assert f'data-human-discord="{user}"' in page and "discord user <span" in page
    forms = re.findall(
        r'<form method="post" action="/inbox/reply".*?</form>', page, flags=re.DOTALL
    )
    replies = [
        dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
        for form in forms
    ]
    [reply] = [f for f in replies if f.get("interactionId") == asked.interaction_id]
    assert (reply["channel"], reply["from"]) == ("discord", user)
    answered = browser_like.post("/inbox/reply", data=reply | {"body": "ship it"})
    assert answered.status_code == 303
    status = humanwire_client.interactions.status(asked.interaction_id)
    assert status.status == "ended" and "ship it" in str(status.result)
    assert humanwire_client.interactions.status(older.interaction_id).status == "pending"


def test_the_inbox_opens_a_telegram_start_link_as_the_person(
    browser_like: httpx.Client, humanwire_api_key: str, humanwire_client: HumanWire
) -> None:
    csrf = login(browser_like, humanwire_api_key)
    people = humanwire_client.people
    ada = people.create(name="Ada", addresses=[{"channel": "telegram"}])
    link = people.confirm(ada.person_id, channel="telegram").start_link
    assert link is not None
    token = link.rsplit("start=", 1)[1]
    form = {"csrf": csrf, "channel": "telegram", "from": "100000001", "to": ""}
    opened = browser_like.post("/inbox/text", data=form | {"body": f"/start {token}"})
    assert opened.status_code == 303
    [address] = people.get(ada.person_id).addresses
    assert (address.to, address.confirmed) == ("100000001", True)
    # Used once: the second time is refused, and no text reaches the agent.
    again = browser_like.post("/inbox/text", data=form | {"body": f"/start {token}"})
    assert again.status_code == 303
    assert "not valid" in browser_like.get(again.headers["location"]).text
