"""The sandbox API's follow mode and the whatsapp own-number form, end to end."""

from __future__ import annotations

import threading
import time

import pytest
from e2e_support import HUMAN

from humanwire import HumanWire
from humanwire.errors import InvalidRequestError, NotFoundError
from humanwire.testing import ScriptedHuman


def test_deliveries_after_an_id_and_held_until_one_arrives(humanwire_client: HumanWire) -> None:
    client = humanwire_client
    client.messages.sms(message="first", to=HUMAN)
    [first] = client.sandbox.deliveries()
    assert client.sandbox.deliveries(after=first.id) == []

    started = time.monotonic()
    assert client.sandbox.deliveries(after=first.id, wait=0.5) == []
    assert time.monotonic() - started >= 0.45  # held for the wait, then empty

    sender = threading.Timer(0.3, lambda: client.messages.sms(message="second", to=HUMAN))
    sender.start()
    try:
        started = time.monotonic()
        newer = client.sandbox.deliveries(after=first.id, wait=10)
        assert time.monotonic() - started < 5  # answered when it landed, not at the end
    finally:
        sender.join()
    assert [d.text for d in newer] == ["second"]
    # Filters combine with the follow mode: nothing newer went to this recipient.
    assert client.sandbox.deliveries(after=first.id, to="+12025550111") == []
    with pytest.raises(NotFoundError):
        client.sandbox.deliveries(after="no-such-delivery")


def test_whatsapp_form_from_the_accounts_own_number(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    fields = [{"id": "ok", "label": "OK?", "type": "checkbox"}]
    template = {"id": "form_request", "variables": {"name": "Ada"}}
    with pytest.raises(InvalidRequestError):  # without a reserved number there is no own number
        humanwire_client.forms.whatsapp(
            to=HUMAN,
            title="OK?",
            fields=fields,
            wait_time=1,
            from_="+12025550142",
            template=template,
        )
    [number, *_] = humanwire_client.numbers.available(country="US")
    humanwire_client.numbers.reserve(number.phone_number)
    action = human.fill_form({"ok": True}, channel="whatsapp")
    result = humanwire_client.forms.whatsapp(
        to=HUMAN,
        title="OK?",
        fields=fields,
        wait_time=5,
        from_=number.phone_number,
        template=template,
    )
    assert result.values == {"ok": "true"}
    assert result.content == "OK?: Yes"
    delivery = action.wait()
    assert delivery.from_ == number.phone_number
    assert result.form_url is not None and result.form_url in delivery.text


def test_every_delivery_carries_the_design_keys(humanwire_client: HumanWire) -> None:
    """docs/design.md lists each delivery as ``{"id", "interactionId", "channel", "kind",
    "from", "to", "text", "formUrl", "createdAt"}``: ``formUrl`` is there (null) for
    messages and calls too, so a reader needs no key check."""
    import httpx

    client = humanwire_client
    client.messages.sms(message="plain", to=HUMAN)
    client.forms.sms(
        to=HUMAN, title="T", fields=[{"id": "a", "label": "A", "type": "text"}], follow_up_time=5
    )
    base_url = str(client.base_url)
    listed = httpx.get(
        f"{base_url}/sandbox/messages",
        headers={"Authorization": f"Bearer {client.api_key}"},
        trust_env=False,
    ).json()
    keys = {"id", "interactionId", "channel", "kind", "from", "to", "text", "formUrl", "createdAt"}
    assert [set(item) for item in listed] == [keys, keys]
    form, message = listed
    assert form["formUrl"].startswith(base_url + "/f/")
    assert message["formUrl"] is None
