"""``client.people`` on the real service over loopback (the session service, on both
stores): the directory through the sync and the async client, one flow each, and an
address confirmed by the code the person answers with (played through the sandbox)."""

from __future__ import annotations

import re

import pytest

from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import ApprovalRequest, Approver
from humanwire.errors import InvalidRequestError, NotFoundError
from humanwire.testing import ScriptedHuman

ADA_PHONE = "+12025550100"


def test_the_client_keeps_the_directory(humanwire_client: HumanWire) -> None:
    people = humanwire_client.people
    ada = people.create(
        name="Ada",
        addresses=[
            {"channel": "sms", "to": ADA_PHONE},
            {"channel": "email", "to": "a@example.com"},
        ],
        metadata={"team": "ops"},
    )
    assert ada.person_id.startswith("per_") and ada.metadata == {"team": "ops"}
    assert [(a.channel, a.confirmed) for a in ada.addresses] == [("sms", False), ("email", False)]
    assert people.get(ada.person_id) == ada
    bob = people.create(name="Bob")
    first = people.list(limit=1)
    assert [p.person_id for p in first.people] == [ada.person_id]
    rest = people.list(after=first.cursor)
    assert [p.person_id for p in rest.people] == [bob.person_id]
    found = people.list(channel="sms", to=ADA_PHONE)
    assert [p.person_id for p in found.people] == [ada.person_id]
    renamed = people.update(ada.person_id, name="Ada L.", metadata={})
    assert renamed.name == "Ada L." and renamed.metadata is None
    assert renamed.addresses == ada.addresses
    people.delete(bob.person_id)
    with pytest.raises(NotFoundError):
        people.get(bob.person_id)
    with pytest.raises(InvalidRequestError) as refused:
        people.create(name="X", addresses=[{"channel": "sms", "to": "12"}])
    assert refused.value.field == "addresses[0].to"
    with pytest.raises(InvalidRequestError) as refused:
        people.list(limit=0)
    assert refused.value.field == "limit"
    with pytest.raises(InvalidRequestError) as refused:
        people.confirm(ada.person_id, channel="slack")
    assert refused.value.field == "channel"


def test_a_confirmed_address_through_the_client(humanwire_client: HumanWire) -> None:
    people = humanwire_client.people
    ada = people.create(name="Ada", addresses=[{"channel": "sms", "to": ADA_PHONE}])
    sent = people.confirm(ada.person_id, channel="sms")
    assert (sent.person_id, sent.channel, sent.to) == (ada.person_id, "sms", ADA_PHONE)
    [delivery] = humanwire_client.sandbox.deliveries(interaction_id=sent.interaction_id)
    code = re.search(r"\b\d{6}\b", delivery.text)
    assert code is not None
    assert delivery.from_ is not None
    humanwire_client.sandbox.reply(
        channel="sms", from_=ADA_PHONE, to=delivery.from_, body=code.group(0)
    )
    [address] = people.get(ada.person_id).addresses
    assert address.confirmed and address.confirmed_at is not None
    # Asked by name now: on that address, by its channel or wherever she comes first.
    messages = humanwire_client.messages
    for sent_to in (
        messages.sms(person=ada.person_id, message="Ship it?"),
        messages.person(ada.person_id, message="Ship it?"),
    ):
        [asked] = humanwire_client.sandbox.deliveries(interaction_id=sent_to.interaction_id)
        assert (asked.channel, asked.to) == ("sms", ADA_PHONE)
    with pytest.raises(InvalidRequestError) as refused:
        messages.sms(to=ADA_PHONE, person=ada.person_id, message="both")
    assert refused.value.field == "person"


async def test_the_async_client_keeps_it_too(async_humanwire_client: AsyncHumanWire) -> None:
    people = async_humanwire_client.people
    ada = await people.create(name="Ada", addresses=[{"channel": "whatsapp", "to": ADA_PHONE}])
    assert (await people.get(ada.person_id)) == ada
    page = await people.list(channel="whatsapp")
    assert [p.person_id for p in page.people] == [ada.person_id]
    moved = await people.update(ada.person_id, addresses=[{"channel": "sms", "to": ADA_PHONE}])
    assert [a.channel for a in moved.addresses] == ["sms"]
    sent = await people.confirm(ada.person_id, channel="sms")
    assert sent.interaction_id
    with pytest.raises(InvalidRequestError) as refused:  # not confirmed yet
        await async_humanwire_client.forms.sms(
            person=ada.person_id,
            title="T",
            fields=[{"id": "a", "label": "A", "type": "text"}],
            follow_up_time=9,
        )
    assert refused.value.field == "person"
    await people.delete(ada.person_id)
    with pytest.raises(NotFoundError):
        await people.delete(ada.person_id)


def test_an_approval_gate_asks_a_person(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    people = humanwire_client.people
    ada = people.create(name="Ada", addresses=[{"channel": "sms", "to": ADA_PHONE}])
    sent = people.confirm(ada.person_id, channel="sms")
    [delivery] = humanwire_client.sandbox.deliveries(interaction_id=sent.interaction_id)
    code = re.search(r"\b\d{6}\b", delivery.text)
    assert code is not None and delivery.from_ is not None
    humanwire_client.sandbox.reply(
        channel="sms", from_=ADA_PHONE, to=delivery.from_, body=code.group(0)
    )
    decided = human.decide_approval("approve", to=ADA_PHONE)
    approver = Approver(humanwire_client, person=ada.person_id, wait_time=20)
    decision = approver.request(ApprovalRequest("ship", {"version": 7}))
    assert decision.approved, decision
    approval = humanwire_client.approvals.get(decided.wait().interaction_id)
    [made] = approval.decisions
    assert (made.approver.channel, made.approver.to, made.approver.person) == (
        "sms",
        ADA_PHONE,
        ada.person_id,
    )
    with pytest.raises(ValueError, match="not two of them"):
        Approver(humanwire_client, person=ada.person_id, to=ADA_PHONE, wait_time=20)
