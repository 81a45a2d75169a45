"""``POST /interactions/{id}/cancel`` on the running service: a pending interaction ends
without a response (an approval's ``onTimeout`` does not apply), an ended one is returned
as it is, another account's is 404."""

from __future__ import annotations

import pytest

from humanwire import HumanWire
from humanwire.errors import NotFoundError
from humanwire.testing import RunningService, ScriptedHuman


def test_cancel_ends_a_pending_message_and_a_late_reply_is_no_answer(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    sent = humanwire_client.messages.sms(
        to=human.phone, message="Still needed?", follow_up_time=300
    )
    silent.wait()
    status = humanwire_client.interactions.cancel(sent.interaction_id)
    assert status.ended and status.result is None
    human.reply("Yes", interaction_id=sent.interaction_id).wait()
    assert humanwire_client.interactions.status(sent.interaction_id).result is None
    # Cancelling again returns it as it is.
    assert humanwire_client.interactions.cancel(sent.interaction_id).ended


def test_a_cancelled_approval_is_not_approved_by_its_on_timeout(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    approval = humanwire_client.approvals.create(
        title="Refund",
        approvers=[{"channel": "sms", "to": human.phone}],
        follow_up_time=300,
        on_timeout="approve",
    )
    silent.wait()
    assert humanwire_client.interactions.cancel(approval.interaction_id).ended
    after = humanwire_client.approvals.get(approval.interaction_id)
    assert after.status == "ended"
    assert after.decision != "approved"


def test_another_accounts_interaction_is_not_found(
    humanwire_service: RunningService, humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    silent = human.stay_silent()
    sent = humanwire_client.messages.sms(to=human.phone, message="Mine", follow_up_time=60)
    silent.wait()
    other = HumanWire(
        api_key=humanwire_service.create_account("other"), base_url=humanwire_service.base_url
    )
    with other, pytest.raises(NotFoundError):
        other.interactions.cancel(sent.interaction_id)
    assert humanwire_client.interactions.status(sent.interaction_id).status == "pending"
