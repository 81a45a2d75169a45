"""``client.messages.discord`` and ``client.forms.discord``, sync and async, against the
real service over loopback with the Discord contract fake (on both stores): the ask is
answered by Reply and the modal's text, a form that fits a modal by its submission, a
form too big for one by its page, and a user sharing no server with the app is the typed
``InvalidToNumberError``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from discord_support import DiscordLive

from humanwire import AsyncHumanWire, FormResponse, HumanWire, InvalidToNumberError, MessageResponse

pytest.importorskip("discord")

MODES = ["sync", "async"]


def _call(live: DiscordLive, mode: str, use: Callable[[Any], Any]) -> Any:
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


def _clean(live: DiscordLive) -> None:
    assert live.fake.violations == [] and live.fake.errors == []


@pytest.mark.parametrize("mode", MODES)
def test_the_client_asks_on_discord_and_gets_the_modals_text(
    discord_live: DiscordLive, mode: str
) -> None:
    live = discord_live
    asking, done = _in_background(
        lambda: _call(
            live,
            mode,
            lambda c: c.messages.discord(
                to=live.ada.id, message="Ship it?", wait_time=30, metadata={"run": "7"}
            ),
        )
    )
    asked = live.posted(live.ada)
    assert asked.content == "Ship it?"
    [reply] = asked.custom_ids()
    live.fake.click(asked, reply, live.ada)
    modal = live.modal()
    live.fake.submit(modal, {modal.inputs[0]["custom_id"]: "yes, ship it"}, live.ada)
    asking.join(30)
    assert "error" not in done, done
    answer = done["result"]
    assert isinstance(answer, MessageResponse)
    assert answer.responded is True and answer.reply == "yes, ship it"
    assert answer.metadata == {"run": "7"}
    _clean(live)


@pytest.mark.parametrize("mode", MODES)
def test_the_clients_discord_form_is_answered_in_its_modal(
    discord_live: DiscordLive, mode: str
) -> None:
    live = discord_live
    sending, done = _in_background(
        lambda: _call(
            live,
            mode,
            lambda c: c.forms.discord(
                to=live.ada.id,
                title="Shipping",
                fields=[
                    {"id": "city", "type": "text", "label": "City", "required": True},
                    {"id": "notes", "type": "textarea", "label": "Notes"},
                ],
                message="Where to? {{url}}",
                wait_time=30,
            ),
        )
    )
    asked = live.posted(live.ada)
    [fill] = asked.custom_ids()
    assert fill.endswith(":form"), asked.custom_ids()
    live.fake.click(asked, fill, live.ada)
    modal = live.modal()
    assert modal.title == "Shipping"
    assert live.fake.submit(modal, {"city": "Lyon", "notes": ""}, live.ada).json()["type"] == 7
    sending.join(30)
    assert "error" not in done, done
    answer = done["result"]
    assert isinstance(answer, FormResponse)
    assert answer.responded is True and answer.values["city"] == "Lyon"
    _clean(live)


@pytest.mark.parametrize("mode", MODES)
def test_the_clients_discord_form_too_big_for_a_modal_is_answered_on_its_page(
    discord_live: DiscordLive, mode: str
) -> None:
    live = discord_live
    fields = [{"id": f"f{i}", "type": "text", "label": f"Field {i}"} for i in range(6)]
    sending, done = _in_background(
        lambda: _call(
            live,
            mode,
            lambda c: c.forms.discord(
                to=live.ada.id,
                title="Shipping",
                fields=fields,
                message="Where to? {{url}}",
                wait_time=30,
            ),
        )
    )
    asked = live.posted(live.ada)
    assert asked.custom_ids() == []
    url = asked.content.removeprefix("Where to? ")
    assert "/f/" in url, asked.content
    submitted = httpx.post(url, json={"values": {"f0": "x"}})
    assert submitted.status_code == 200, submitted.text
    sending.join(30)
    assert "error" not in done, done
    answer = done["result"]
    assert isinstance(answer, FormResponse)
    assert answer.responded is True and answer.values == {"f0": "x"}
    _clean(live)


@pytest.mark.parametrize("mode", MODES)
def test_a_user_sharing_no_server_is_the_clients_invalid_to_number(
    discord_live: DiscordLive, mode: str
) -> None:
    live = discord_live
    stranger = live.fake.add_user("stranger", in_guild=False)
    with pytest.raises(InvalidToNumberError) as refused:
        _call(live, mode, lambda c: c.messages.discord(to=stranger.id, message="hi", wait_time=5))
    assert refused.value.field == "to" and "shares no server" in refused.value.message
    assert live.fake.posted_to(stranger) == []
