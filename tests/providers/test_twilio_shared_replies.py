"""Replies to a shared sender when two accounts wait on the same person, end to end on
both stores: the service on loopback, Twilio's contract fake playing the person's phone.

Account A and then account B ask the same person X from the shared number (or the shared
WhatsApp sender). A reply that does not say which request it answers goes to neither
account: X gets one clarifying text listing the open requests and their codes, and a
reply naming a code reaches exactly that request, of whichever account. A reply to an
account's reserved number is only ever that account's."""

from __future__ import annotations

import json
import re

import pytest
from twilio_support import HUMAN, POOL, SMS_FROM, WHATSAPP_FROM, Live

from humanwire import HumanWire
from humanwire.types import MessageReceivedPayload
from humanwire.types.approvals import Approval

_CODE = re.compile(r"YES (\d{4}) or NO \1")


def _texts(live: Live, count: int) -> list[str]:
    """The first ``count`` texts sent to X, once that many went out."""
    sent = live.fake.wait_for(lambda: len(live.fake.sent_to(HUMAN)) >= count, timeout=20)
    assert sent
    texts = []
    for message in live.fake.sent_to(HUMAN)[:count]:
        if message.body is None:  # WhatsApp outside its window: the template's text
            texts.append(json.loads(message.params["ContentVariables"])["1"])
        else:
            texts.append(message.body)
    return texts


def _approval(client: HumanWire, title: str, channel: str = "sms") -> Approval:
    return client.approvals.create(
        title=title,
        action={"name": "refund", "arguments": {"title": title}},
        approvers=[{"channel": channel, "to": HUMAN}],
        follow_up_time=120,
    )


def _decision(client: HumanWire, interaction_id: str) -> tuple[str | None, list[str]]:
    approval = client.approvals.get(interaction_id)
    return approval.decision, [d.via for d in approval.decisions]


def _reply_of(client: HumanWire, interaction_id: str) -> str | None:
    """The reply an ask got (None while it waits)."""
    status = client.interactions.status(interaction_id)
    if status.result is None:
        return None
    payload = status.result.payload
    assert isinstance(payload, MessageReceivedPayload)
    return payload.body


@pytest.mark.parametrize(
    ("channel", "sender"), [("sms", SMS_FROM), ("whatsapp", WHATSAPP_FROM)], ids=["sms", "whatsapp"]
)
def test_a_yes_without_a_code_decides_neither_accounts_request(
    live: Live, channel: str, sender: str
) -> None:
    other = live.account("other")
    first = _approval(live.client, "Refund order 1", channel)
    second = _approval(other, "Refund order 2", channel)
    asked_first, asked_second = _texts(live, 2)
    assert _CODE.search(asked_first) is None  # nothing else was open when A asked
    shown = _CODE.search(asked_second)
    assert shown is not None, asked_second
    second_code = shown.group(1)

    live.fake.send_inbound(HUMAN, sender, "YES", channel=channel)
    clarified = _texts(live, 3)[2]
    assert "Refund order 1" in clarified and "Refund order 2" in clarified
    assert f"YES {second_code}" in clarified
    first_code = re.search(r'"Refund order 1": YES (\d{4})', clarified)
    assert first_code is not None and first_code.group(1) != second_code
    assert _decision(live.client, first.interaction_id) == (None, [])
    assert _decision(other, second.interaction_id) == (None, [])

    live.fake.send_inbound(HUMAN, sender, f"YES {second_code} fine", channel=channel)
    decided = other.approvals.wait(second.interaction_id, timeout=20)
    assert decided.decision == "approved"
    assert [(d.via, d.comment) for d in decided.decisions] == [(f"{channel}_reply", "fine")]
    assert _decision(live.client, first.interaction_id) == (None, [])

    # Only A's is open now: a reply without a code is A's, as with one account.
    live.fake.send_inbound(HUMAN, sender, "NO", channel=channel)
    rejected = live.client.approvals.wait(first.interaction_id, timeout=20)
    assert rejected.decision == "rejected"
    assert len(live.fake.sent_to(HUMAN)) == 3  # no clarifying text more
    assert live.fake.violations == []


def test_a_reply_to_two_accounts_asks_answers_neither_until_it_names_a_code(
    live: Live,
) -> None:
    other = live.account("other")
    first = live.client.messages.sms(to=HUMAN, message="Which colour?", follow_up_time=120)
    second = other.messages.sms(to=HUMAN, message="Which day?", follow_up_time=120)
    _texts(live, 2)

    live.fake.send_inbound(HUMAN, SMS_FROM, "blue")
    clarified = _texts(live, 3)[2]
    codes = dict(re.findall(r'"(Which \w+\?)": reply (\d{4})', clarified))
    assert set(codes) == {"Which colour?", "Which day?"}, clarified
    assert codes["Which colour?"] != codes["Which day?"]
    assert _reply_of(live.client, first.interaction_id) is None
    assert _reply_of(other, second.interaction_id) is None

    # The older one, named by its code: the answer without the code reaches A.
    live.fake.send_inbound(HUMAN, SMS_FROM, f"{codes['Which colour?']} blue")
    live.fake.wait_for(lambda: _reply_of(live.client, first.interaction_id) is not None)
    assert _reply_of(live.client, first.interaction_id) == "blue"
    assert _reply_of(other, second.interaction_id) is None

    live.fake.send_inbound(HUMAN, SMS_FROM, "Tuesday")
    live.fake.wait_for(lambda: _reply_of(other, second.interaction_id) is not None)
    assert _reply_of(other, second.interaction_id) == "Tuesday"
    assert len(live.fake.sent_to(HUMAN)) == 3


def test_an_ask_and_another_accounts_approval_need_the_code(live: Live) -> None:
    other = live.account("other")
    ask = live.client.messages.sms(to=HUMAN, message="Coming tonight?", follow_up_time=120)
    approval = _approval(other, "Refund order 3")
    _texts(live, 2)

    live.fake.send_inbound(HUMAN, SMS_FROM, "YES")
    clarified = _texts(live, 3)[2]
    code = re.search(r'"Refund order 3": YES (\d{4})', clarified)
    assert code is not None and '"Coming tonight?": reply ' in clarified, clarified
    assert _reply_of(live.client, ask.interaction_id) is None
    assert _decision(other, approval.interaction_id) == (None, [])

    live.fake.send_inbound(HUMAN, SMS_FROM, f"yes {code.group(1)}")
    decided = other.approvals.wait(approval.interaction_id, timeout=20)
    assert decided.decision == "approved"
    assert _reply_of(live.client, ask.interaction_id) is None


def test_a_reply_to_a_reserved_number_is_only_its_accounts(live: Live) -> None:
    other = live.account("other")
    shared = _approval(other, "Refund order 4")  # from the shared number, asked first
    live.client.numbers.reserve(POOL[0])
    own = _approval(live.client, "Refund order 5")
    asked = _texts(live, 2)
    assert [m.from_ for m in live.fake.sent_to(HUMAN)] == [SMS_FROM, POOL[0]], asked

    live.fake.send_inbound(HUMAN, POOL[0], "YES")
    decided = live.client.approvals.wait(own.interaction_id, timeout=20)
    assert decided.decision == "approved"
    assert _decision(other, shared.interaction_id) == (None, [])
