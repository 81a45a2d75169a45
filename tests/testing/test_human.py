"""The scripted human against the real service (plugin fixtures, loopback HTTP)."""

from __future__ import annotations

from typing import Any

import pytest

from humanwire import AsyncHumanWire, HumanWire
from humanwire.testing import RunningService, ScriptedHuman, WebhookReceiver

HUMAN = "+12025550100"
SLACK_HUMAN = "U0HUMAN0001"
TELEGRAM_HUMAN = "100000001"
TEAMS_HUMAN = "29:humanwire-inbox-human"
DISCORD_HUMAN = "1100000000000000100"
NO_RESPONSE = "Human did not respond. Continue where you left off."


def test_reply_answers_the_next_sms(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    replied = human.reply("yes, ship it")
    result = humanwire_client.messages.sms(message="Ship?", to=HUMAN, wait_time=5)
    assert result.responded is True
    assert result.response == "Human response: yes, ship it"
    delivery = replied.wait()
    assert (delivery.channel, delivery.kind, delivery.to) == ("sms", "message", HUMAN)
    assert delivery.text == "Ship?"
    assert delivery.interaction_id == result.interaction_id


def test_reply_in_the_slack_thread(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    replied = human.reply("looks good", channel="slack")
    result = humanwire_client.messages.slack(message="Review?", to=SLACK_HUMAN, wait_time=5)
    assert result.response == "Human response: looks good"
    assert replied.wait().to == SLACK_HUMAN


def test_reply_on_telegram_answers_that_message(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    older = humanwire_client.messages.telegram(
        message="First?", to=TELEGRAM_HUMAN, follow_up_time=60
    )
    newer = humanwire_client.messages.telegram(
        message="Second?", to=TELEGRAM_HUMAN, follow_up_time=60
    )
    # A reply to the older message answers it, not the newer one waiting in the chat.
    replied = human.reply(
        "about the first", channel="telegram", interaction_id=older.interaction_id
    )
    delivery = replied.wait()
    assert (delivery.channel, delivery.to, delivery.text) == ("telegram", TELEGRAM_HUMAN, "First?")
    assert humanwire_client.interactions.status(older.interaction_id).status == "ended"
    assert humanwire_client.interactions.status(newer.interaction_id).status == "pending"
    answered = human.reply("yes", channel="telegram")
    result = humanwire_client.messages.telegram(message="Ship?", to=TELEGRAM_HUMAN, wait_time=5)
    assert result.response == "Human response: yes"
    assert answered.wait().interaction_id == result.interaction_id


def test_fill_form_on_telegram(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    filled = human.fill_form({"name": "Ada"}, channel="telegram")
    result = humanwire_client.forms.telegram(
        to=TELEGRAM_HUMAN, title="Order", fields=FIELDS, wait_time=5
    )
    assert result.values is not None and result.values["name"] == "Ada"
    delivery = filled.wait()
    assert (delivery.channel, delivery.to) == ("telegram", TELEGRAM_HUMAN)


def test_reply_and_fill_form_on_teams(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    answered = human.reply("yes", channel="teams")
    result = humanwire_client.messages.teams(message="Ship?", to=TEAMS_HUMAN, wait_time=5)
    assert result.response == "Human response: yes"
    delivery = answered.wait()
    assert (delivery.channel, delivery.to) == ("teams", TEAMS_HUMAN)
    assert delivery.interaction_id == result.interaction_id
    filled = human.fill_form({"name": "Ada"})
    form = humanwire_client.forms.teams(to=TEAMS_HUMAN, title="Order", fields=FIELDS, wait_time=5)
    assert form.values is not None and form.values["name"] == "Ada"
    assert filled.wait().channel == "teams"


def test_reply_and_fill_form_on_discord(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    older = humanwire_client.messages.discord(message="First?", to=DISCORD_HUMAN, follow_up_time=60)
    # The defaults reach the inbox's Discord user: a reply names its message (Reply).
    answered = human.reply("yes", channel="discord")
    result = humanwire_client.messages.discord(message="Ship?", to=DISCORD_HUMAN, wait_time=5)
    assert result.response == "Human response: yes"
    delivery = answered.wait()
    assert (delivery.channel, delivery.to) == ("discord", DISCORD_HUMAN)
    assert delivery.interaction_id == result.interaction_id
    assert humanwire_client.interactions.status(older.interaction_id).status == "pending"
    filled = human.fill_form({"name": "Ada"})
    form = humanwire_client.forms.discord(
        to=DISCORD_HUMAN, title="Order", fields=FIELDS, wait_time=5
    )
    assert form.values is not None and form.values["name"] == "Ada"
    assert filled.wait().channel == "discord"


def test_open_start_link_binds_the_chat_of_a_person(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    people = humanwire_client.people
    ada = people.create(name="Ada", addresses=[{"channel": "telegram"}])
    sent = people.confirm(ada.person_id, channel="telegram")
    assert sent.start_link is not None and sent.interaction_id is None
    assert sent.start_link.startswith("https://t.me/humanwire_sandbox_bot?start=")
    human.open_start_link(sent.start_link)
    [address] = people.get(ada.person_id).addresses
    assert (address.to, address.confirmed) == (TELEGRAM_HUMAN, True)
    with pytest.raises(AssertionError, match="not valid"):
        human.open_start_link(sent.start_link)  # used once already


def test_reply_on_whatsapp_sees_the_template(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    replied = human.reply("approved", channel="whatsapp")
    result = humanwire_client.messages.whatsapp(message="Approve?", to=HUMAN, wait_time=5)
    assert result.response == "Human response: approved"
    text = replied.wait().text
    assert "Message from agent: Approve?" in text
    assert "within 5 seconds" in text


def test_two_replies_answer_two_messages_in_order(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    first, second = human.reply("one"), human.reply("two")
    a = humanwire_client.messages.sms(message="First?", to=HUMAN, wait_time=5)
    b = humanwire_client.messages.sms(message="Second?", to=HUMAN, wait_time=5)
    assert (a.response, b.response) == ("Human response: one", "Human response: two")
    assert (first.wait().text, second.wait().text) == ("First?", "Second?")


def test_a_delivery_from_before_the_script_is_not_next(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    notice = humanwire_client.messages.sms(message="FYI: deploy started", to=HUMAN)
    replied = human.reply("go")
    asked = humanwire_client.messages.sms(message="Continue?", to=HUMAN, wait_time=5)
    assert asked.response == "Human response: go"
    assert replied.wait().interaction_id == asked.interaction_id != notice.interaction_id


def test_stay_silent_lets_the_wait_run_out(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    result = humanwire_client.messages.sms(message="Anyone?", to=HUMAN, wait_time=1)
    assert result.responded is False
    assert result.response == NO_RESPONSE
    assert silent.wait().text == "Anyone?"


def test_reply_late_reaches_the_webhook(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client)
    human.reply_late("sorry, yes", after=1.3)
    result = humanwire_client.messages.sms(message="Ok?", to=HUMAN, wait_time=1, follow_up_time=60)
    assert result.responded is False
    [event] = webhook_receiver.wait_for("message.received", timeout=10)
    assert event.event_type == "message.received"
    assert event.payload.interaction_id == result.interaction_id
    assert event.payload.body == "sorry, yes"
    assert webhook_receiver.deliveries[0].signature_valid is True


FIELDS: list[dict[str, Any]] = [
    {"id": "name", "label": "Name", "type": "text", "required": True},
    {"id": "agree", "label": "Agree", "type": "checkbox"},
    {
        "id": "size",
        "label": "Size",
        "type": "select",
        "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}],
    },
]


def test_fill_form(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    filled = human.fill_form({"name": "Ada", "agree": True, "size": "l"})
    result = humanwire_client.forms.sms(to=HUMAN, title="Order", fields=FIELDS, wait_time=5)
    assert result.responded is True
    assert result.values == {"name": "Ada", "agree": "true", "size": "l"}
    assert result.content == "Name: Ada\nAgree: Yes\nSize: Large"
    delivery = filled.wait()
    assert delivery.kind == "form"
    assert delivery.form_url == result.form_url
    assert filled.response is not None and filled.response.is_success


def test_a_refused_form_fails_the_action_and_targets_by_interaction(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    # Only followUpTime: the send returns at once, the delivery exists before the script.
    sent = humanwire_client.forms.sms(to=HUMAN, title="Order", fields=FIELDS, follow_up_time=60)
    refused = human.fill_form({"agree": True}, interaction_id=sent.interaction_id)
    with pytest.raises(AssertionError, match="400") as info:
        refused.wait()
    assert "fill_form" in str(info.value)
    assert refused.response is not None and refused.response.status_code == 400
    accepted = human.fill_form({"name": "Ada"}, interaction_id=sent.interaction_id)
    assert accepted.wait().interaction_id == sent.interaction_id
    status = humanwire_client.interactions.status(sent.interaction_id)
    assert status.status == "ended"


def test_answer_call(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    answered = human.answer_call("They confirmed Tuesday.")
    result = humanwire_client.calls.create(
        to=HUMAN, prompt="Confirm the appointment.", wait_for_call_end=True
    )
    assert (result.outcome, result.summary) == ("completed", "They confirmed Tuesday.")
    delivery = answered.wait()
    assert (delivery.channel, delivery.kind) == ("call", "call")


def test_miss_and_transfer_call(humanwire_client: HumanWire, human: ScriptedHuman) -> None:
    human.miss_call()
    missed = humanwire_client.calls.create(to=HUMAN, prompt="Hi", wait_for_call_end=True)
    assert missed.outcome == "no_answer"
    assert missed.error == "human did not respond"
    human.transfer_call("Wants a person")
    moved = humanwire_client.calls.create(
        to=HUMAN, prompt="Hi", transfer_to="+12025550143", wait_for_call_end=True
    )
    assert moved.outcome == "transferred"


def test_send_text_is_an_unsolicited_message(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    webhook_receiver.register(humanwire_client, event_types=["message.received"])
    human.send_text("Hello agent")
    [event] = webhook_receiver.wait_for("message.received")
    assert event.payload.interaction_id is None
    assert (event.payload.from_, event.payload.body) == (HUMAN, "Hello agent")
    assert event.payload.to == "+12025550199"  # the shared number: nothing reserved


def test_call_in_to_the_reserved_number(
    humanwire_client: HumanWire, human: ScriptedHuman, webhook_receiver: WebhookReceiver
) -> None:
    number = humanwire_client.numbers.available(country="US")[0].phone_number
    humanwire_client.numbers.reserve(number)
    webhook_receiver.register(humanwire_client)
    human.call_in("Please call me back")
    [event] = webhook_receiver.wait_for("call.conversation.ended")
    assert (event.payload.to, event.payload.summary) == (number, "Please call me back")
    human.send_text("texting the number too")
    [text] = webhook_receiver.wait_for("message.received")
    assert text.payload.to == number


def test_deliveries_are_listed_oldest_first(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    humanwire_client.messages.sms(message="one", to=HUMAN)
    humanwire_client.messages.slack(message="two", to=SLACK_HUMAN)
    humanwire_client.messages.sms(message="three", to=HUMAN)
    assert [d.text for d in human.deliveries()] == ["one", "two", "three"]
    assert [d.text for d in human.deliveries(channel="slack")] == ["two"]


def test_accounts_do_not_see_each_other(
    humanwire_service: RunningService, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    humanwire_client.messages.sms(message="private", to=HUMAN)
    other_key = humanwire_service.create_account("other")
    with ScriptedHuman(humanwire_service.base_url, other_key) as other:
        assert other.deliveries() == []
    assert [d.text for d in human.deliveries()] == ["private"]


def test_wait_fails_readably_when_nothing_matches(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    never = human.reply("hello?", to="+12025550143")
    humanwire_client.messages.sms(message="to someone else", to=HUMAN)
    with pytest.raises(AssertionError) as info:
        never.wait(timeout=0.5)
    message = str(info.value)
    assert "no matching delivery within 0.5s" in message
    assert "'to someone else'" in message


async def test_async_client_and_async_wait(
    async_humanwire_client: AsyncHumanWire, human: ScriptedHuman
) -> None:
    replied = human.reply("async yes")
    result = await async_humanwire_client.messages.sms(message="Async?", to=HUMAN, wait_time=5)
    assert result.response == "Human response: async yes"
    assert (await replied.async_wait()).text == "Async?"
