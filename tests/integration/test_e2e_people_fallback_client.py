"""``fallback_after=`` on the client's per-channel message and form methods, sync and
async, against the real service over loopback (the session service, on both stores): the
ask moves to the person's next confirmed address on the channel, and the answer there
answers the one interaction; the client refuses it beside ``to`` before sending."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from humanwire import AsyncHumanWire, HumanWire
from humanwire.errors import InvalidRequestError

FIRST = "+12025550100"
NEXT = "+12025550101"
FIELDS: list[dict[str, Any]] = [{"id": "day", "label": "Which day?", "type": "text"}]


def _code(text: str) -> str:
    found = re.search(r"\b\d{6}\b", text)
    assert found is not None
    return found.group(0)


def _ada(client: HumanWire) -> tuple[str, str]:
    """A person with two sms numbers, both confirmed (the code answered in the sandbox):
    her id, and the id of the last delivery to ``NEXT`` (her code)."""
    ada = client.people.create(
        name="Ada", addresses=[{"channel": "sms", "to": FIRST}, {"channel": "sms", "to": NEXT}]
    )
    for number in (FIRST, NEXT):
        sent = client.people.confirm(ada.person_id, channel="sms", to=number)
        [code] = client.sandbox.deliveries(interaction_id=sent.interaction_id)
        assert code.from_ is not None
        client.sandbox.reply(channel="sms", from_=number, to=code.from_, body=_code(code.text))
    return ada.person_id, code.id


async def _async_ada(client: AsyncHumanWire) -> tuple[str, str]:
    ada = await client.people.create(
        name="Ada", addresses=[{"channel": "sms", "to": FIRST}, {"channel": "sms", "to": NEXT}]
    )
    for number in (FIRST, NEXT):
        sent = await client.people.confirm(ada.person_id, channel="sms", to=number)
        [code] = await client.sandbox.deliveries(interaction_id=sent.interaction_id)
        assert code.from_ is not None
        await client.sandbox.reply(
            channel="sms", from_=number, to=code.from_, body=_code(code.text)
        )
    return ada.person_id, code.id


def test_a_message_and_a_form_move_on_through_the_sync_client(
    humanwire_client: HumanWire,
) -> None:
    client = humanwire_client
    ada, last = _ada(client)
    asked = client.messages.sms(person=ada, message="Ship it?", follow_up_time=60, fallback_after=1)
    [onward] = client.sandbox.deliveries(to=NEXT, after=last, wait=30)
    assert onward.text == "Ship it?" and onward.interaction_id != asked.interaction_id
    assert onward.from_ is not None
    client.sandbox.reply(channel="sms", from_=NEXT, to=onward.from_, body="ship it")
    status = client.interactions.status(asked.interaction_id)
    assert status.status == "ended"
    form = client.forms.sms(
        person=ada, title="Shift", fields=FIELDS, follow_up_time=60, fallback_after=1
    )
    [onward_form] = client.sandbox.deliveries(to=NEXT, after=onward.id, wait=30)
    assert onward_form.kind == "form" and onward_form.form_url == form.form_url
    assert form.form_url is not None
    assert httpx.post(form.form_url, json={"values": {"day": "Monday"}}).status_code < 300
    done = client.interactions.status(form.interaction_id)
    assert done.status == "ended" and done.result is not None
    assert done.result.payload.values == {"day": "Monday"}  # type: ignore[union-attr]


async def test_a_form_moves_on_through_the_async_client(
    async_humanwire_client: AsyncHumanWire,
) -> None:
    client = async_humanwire_client
    ada, last = await _async_ada(client)
    form = await client.forms.sms(
        person=ada, title="Shift", fields=FIELDS, follow_up_time=60, fallback_after=1
    )
    [onward] = await client.sandbox.deliveries(to=NEXT, after=last, wait=30)
    assert onward.kind == "form" and onward.interaction_id != form.interaction_id
    async with httpx.AsyncClient() as browser:
        assert form.form_url is not None
        submitted = await browser.post(form.form_url, json={"values": {"day": "Friday"}})
        assert submitted.status_code < 300
    done = await client.interactions.status(form.interaction_id)
    assert done.status == "ended"
    asked = await client.messages.sms(
        person=ada, message="Go?", follow_up_time=60, fallback_after=1
    )
    [moved] = await client.sandbox.deliveries(to=NEXT, after=onward.id, wait=30)
    assert moved.text == "Go?"
    assert (await client.interactions.status(asked.interaction_id)).status == "pending"


@pytest.mark.parametrize("method", ["messages", "forms"])
def test_the_client_refuses_fallback_after_beside_to(
    humanwire_client: HumanWire, method: str
) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        if method == "messages":
            humanwire_client.messages.email(
                to="a@example.com", message="x", follow_up_time=60, fallback_after=5
            )
        else:
            humanwire_client.forms.email(
                to="a@example.com", title="T", fields=FIELDS, follow_up_time=60, fallback_after=5
            )
    assert refused.value.field == "fallbackAfter"
    assert humanwire_client.sandbox.deliveries(to="a@example.com") == []
