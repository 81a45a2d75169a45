"""``metadata`` on every send, end to end (docs/design.md "Metadata"): stored with the
interaction, echoed on the send's response, the status and every event about it; the
limits are 400 on ``metadata`` and lose nothing."""

from __future__ import annotations

import httpx
import pytest
from e2e_support import HUMAN, SLACK_HUMAN

from humanwire import HumanWire
from humanwire.errors import InvalidRequestError
from humanwire.testing import ScriptedHuman, WebhookReceiver
from humanwire.types import (
    CallConversationEndedEvent,
    FormReceivedEvent,
    MessageReceivedEvent,
)

RUN = {"thread_id": "t-42", "checkpoint_ns": "approve:7"}


def test_a_message_carries_its_metadata_everywhere(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client)
    human.reply("ship it")
    held = humanwire_client.messages.sms(to=HUMAN, message="Ship?", wait_time=5, metadata=RUN)
    assert (held.responded, held.metadata) == (True, RUN)
    status = humanwire_client.interactions.status(held.interaction_id)
    assert status.metadata == RUN
    assert isinstance(status.result, MessageReceivedEvent)
    assert status.result.payload.metadata == RUN
    # A late reply goes to the webhooks, with it.
    human.reply_late("sorry, yes", after=1.5)
    late = humanwire_client.messages.sms(
        to=HUMAN, message="Still?", wait_time=1, follow_up_time=60, metadata=RUN
    )
    assert (late.responded, late.metadata) == (False, RUN)
    [event] = webhook_receiver.wait_for("message.received")
    assert (event.payload.interaction_id, event.payload.metadata) == (late.interaction_id, RUN)
    # Without wait: echoed at once.
    sent = humanwire_client.messages.slack(to=SLACK_HUMAN, message="FYI", metadata={"k": "v"})
    assert sent.metadata == {"k": "v"}
    # None given: none echoed (not an empty object).
    plain = humanwire_client.messages.slack(to=SLACK_HUMAN, message="plain")
    assert plain.metadata is None
    assert humanwire_client.interactions.status(plain.interaction_id).metadata is None


def test_a_form_and_a_call_carry_it_to_their_events(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client)
    human.fill_form({"decision": "approve"})
    form = humanwire_client.forms.slack(
        to=SLACK_HUMAN,
        title="Deploy?",
        fields=[
            {
                "id": "decision",
                "label": "Decision",
                "type": "select",
                "required": True,
                "options": [
                    {"label": "Approve", "value": "approve"},
                    {"label": "Reject", "value": "reject"},
                ],
            }
        ],
        follow_up_time=60,
        metadata=RUN,
    )
    assert (form.status, form.metadata) == ("pending", RUN)
    [received] = webhook_receiver.wait_for("form.received")
    assert isinstance(received, FormReceivedEvent) and received.payload.metadata == RUN
    human.answer_call("Friday")
    call = humanwire_client.calls.create(
        to=HUMAN, prompt="When?", wait_for_call_end=True, metadata={"ticket": "T-1"}
    )
    assert (call.outcome, call.metadata) == ("completed", {"ticket": "T-1"})
    [ended] = webhook_receiver.wait_for("call.conversation.ended")
    assert isinstance(ended, CallConversationEndedEvent)
    assert ended.payload.metadata == {"ticket": "T-1"}
    phone = humanwire_client.phone.sms(to=HUMAN, message="hello", metadata={"via": "phone"})
    assert phone.metadata == {"via": "phone"}
    human.answer_call("Noted")
    spoken = humanwire_client.phone.call(to=HUMAN, message="Say hi", metadata={"via": "call"})
    assert spoken.metadata == {"via": "call"}


def test_a_channel_cards_metadata_is_merged_under_the_sends(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    card = humanwire_client.channels.create(
        type="sms", to=HUMAN, wait_time=5, metadata={"team": "ops", "run": "card"}
    )
    assert card.metadata == {"team": "ops", "run": "card"}
    assert humanwire_client.channels.get(card.id).metadata == card.metadata
    human.reply("ok")
    answer = humanwire_client.messages.channel(card.id, message="Go?", metadata={"run": "r1"})
    assert answer.metadata == {"team": "ops", "run": "r1"}
    too_many = {f"k{i}": "v" for i in range(19)}
    with pytest.raises(InvalidRequestError) as caught:
        humanwire_client.messages.channel(card.id, message="Go?", metadata=too_many)
    assert caught.value.field == "metadata" and "21" in str(caught.value)


@pytest.mark.parametrize(
    ("metadata", "says"),
    [
        ({f"k{i}": "v" for i in range(21)}, "at most 20"),
        ({"k" * 41: "v"}, "1 to 40"),
        ({"": "v"}, "1 to 40"),
        ({"k": "v" * 501}, "at most 500"),
        ({"k": 3}, "must be a string"),
        ({"k": None}, "must be a string"),
        (["k", "v"], "object"),
        ("k=v", "object"),
    ],
)
def test_metadata_outside_the_limits_is_a_400_naming_it(
    humanwire_service: object,
    humanwire_api_key: str,
    humanwire_client: HumanWire,
    metadata: object,
    says: str,
) -> None:
    base = str(humanwire_client.base_url).rstrip("/")
    before = humanwire_client.sandbox.deliveries()
    answer = httpx.post(
        f"{base}/messages/sms",
        json={"to": HUMAN, "message": "hi", "metadata": metadata},
        headers={"Authorization": f"Bearer {humanwire_api_key}"},
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_request", "metadata")
    assert says in error["message"]
    assert humanwire_client.sandbox.deliveries() == before  # nothing was sent
    # The client refuses the same before sending anything.
    if isinstance(metadata, dict):
        with pytest.raises(InvalidRequestError) as caught:
            humanwire_client.messages.sms(to=HUMAN, message="hi", metadata=metadata)
        assert caught.value.field == "metadata"


def test_metadata_at_the_limits_is_kept_exactly(humanwire_client: HumanWire) -> None:
    edge = {f"{i:02d}" + "k" * 38: "é" * 500 for i in range(20)}
    sent = humanwire_client.messages.slack(to=SLACK_HUMAN, message="edge", metadata=edge)
    assert sent.metadata == edge
    assert humanwire_client.interactions.status(sent.interaction_id).metadata == edge


def test_the_openapi_document_describes_metadata(humanwire_client: HumanWire) -> None:
    base = str(humanwire_client.base_url).rstrip("/")
    document = httpx.get(f"{base}/openapi.json").json()
    text = str(document)
    assert "maxProperties': 20" in text and "'maxLength': 500" in text
    schemas = document["components"]["schemas"]
    sms = schemas["SMSMessageRequest"]["properties"]["metadata"]
    assert "anyOf" in sms or sms.get("type") == "object"
    assert "metadata" in schemas["InteractionStatus"]["properties"]
