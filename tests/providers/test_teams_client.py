"""``client.messages.teams`` and ``client.forms.teams``, sync and async, against the real
service over loopback with the Teams contract fake (on both stores): the ask is answered
by the person's next message in their chat with the bot, the form's submission is the
answer, and a person without the app installed is the typed ``InvalidToNumberError``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from teams_support import TeamsLive

from humanwire import AsyncHumanWire, FormResponse, HumanWire, InvalidToNumberError, MessageResponse

MODES = ["sync", "async"]


def _call(live: TeamsLive, mode: str, use: Callable[[Any], Any]) -> Any:
    """What ``use(client)`` gives, on a client of the mode (the key of the live account)."""
    key = live.http.headers["Authorization"].removeprefix("Bearer ")
    if mode == "sync":
        with HumanWire(key, live.base_url) as client:
            return use(client)

    async def run() -> Any:
        async with AsyncHumanWire(key, live.base_url) as client:
            return await use(client)

    return asyncio.run(run())


def _in_background(work: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["result"] = work()
        except Exception as exc:  # handed to the test's thread
            done["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


def _clean(live: TeamsLive) -> None:
    assert live.fake.violations == [] and live.fake.errors == []


@pytest.mark.parametrize("mode", MODES)
def test_the_client_asks_on_teams_and_gets_the_next_message(
    teams_live: TeamsLive, mode: str
) -> None:
    live = teams_live
    asking, done = _in_background(
        lambda: _call(
            live,
            mode,
            lambda c: c.messages.teams(
                to=live.ada.id, message="Ship it?", wait_time=30, metadata={"run": "7"}
            ),
        )
    )
    asked = live.sent(live.ada)
    assert asked.text == "Ship it?"
    assert live.fake.say(live.ada, "yes, ship it").status_code == 200
    asking.join(30)
    assert "error" not in done, done
    answer = done["result"]
    assert isinstance(answer, MessageResponse)
    assert answer.responded is True and "yes, ship it" in answer.response
    assert answer.metadata == {"run": "7"}
    _clean(live)


@pytest.mark.parametrize("mode", MODES)
def test_the_clients_teams_form_is_answered_by_its_submission(
    teams_live: TeamsLive, mode: str
) -> None:
    live = teams_live
    sending, done = _in_background(
        lambda: _call(
            live,
            mode,
            lambda c: c.forms.teams(
                to=live.ada.id,
                title="Shipping",
                # An address has no Adaptive Card input: the form goes out as its page.
                fields=[
                    {"id": "city", "type": "text", "label": "City", "required": True},
                    {"id": "office", "type": "address", "label": "Office"},
                ],
                message="Where to? {{url}}",
                wait_time=30,
            ),
        )
    )
    asked = live.sent(live.ada)
    assert asked.text.startswith("Where to? ") and asked.cards() == [], asked.body
    url = asked.text.removeprefix("Where to? ")
    assert "/f/" in url, asked.text
    submitted = httpx.post(url, json={"values": {"city": "Lyon"}})
    assert submitted.status_code == 200, submitted.text
    sending.join(30)
    assert "error" not in done, done
    answer = done["result"]
    assert isinstance(answer, FormResponse)
    assert answer.responded is True and answer.values == {"city": "Lyon"}
    _clean(live)


@pytest.mark.parametrize("mode", MODES)
def test_a_person_without_the_app_is_the_clients_invalid_to_number(
    teams_live: TeamsLive, mode: str
) -> None:
    live = teams_live
    eve = live.fake.add_user("Eve")
    with pytest.raises(InvalidToNumberError) as refused:
        _call(live, mode, lambda c: c.messages.teams(to=eve.id, message="hi", wait_time=5))
    assert refused.value.field == "to" and "installed" in refused.value.message
    assert live.fake.sent_to(eve) == []
