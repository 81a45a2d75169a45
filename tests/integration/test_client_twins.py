"""A client's twin for the other mode talks to the same service and account."""

from __future__ import annotations

from humanwire import AsyncHumanWire, HumanWire
from humanwire.approval import Approver
from humanwire.testing import ScriptedHuman


async def test_to_async_sends_on_the_same_account(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    twin = humanwire_client.to_async()
    try:
        assert (twin.base_url, twin.api_key) == (
            humanwire_client.base_url,
            humanwire_client.api_key,
        )
        human.reply("from the twin")
        result = await twin.messages.sms(to="+12025550100", message="twin?", wait_time=10)
        assert result.reply == "from the twin"
        # The sync client of the same account sees what the twin sent.
        [delivery] = humanwire_client.sandbox.deliveries(interaction_id=result.interaction_id)
        assert delivery.text == "twin?"
    finally:
        await twin.aclose()


async def test_to_sync_round_trip(async_humanwire_client: AsyncHumanWire) -> None:
    twin = async_humanwire_client.to_sync()
    try:
        sent = twin.messages.sms(to="+12025550100", message="hello")
        status = await async_humanwire_client.interactions.status(sent.interaction_id)
        assert status.interaction_id == sent.interaction_id
    finally:
        twin.close()


async def test_approver_given_a_sync_client_asks_through_its_account_when_async(
    humanwire_client: HumanWire, human: ScriptedHuman
) -> None:
    from humanwire.approval import ApprovalRequest

    approver = Approver(humanwire_client, wait_time=10)
    human.decide_approval("approve")
    decision = await approver.arequest(ApprovalRequest("deploy", {"version": "1.2"}))
    assert decision.approved and not decision.timed_out
    assert approver.async_client.api_key == humanwire_client.api_key
