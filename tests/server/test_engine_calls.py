"""Calls: outcomes played by the sandbox callee, the skill's time limit, inbound calls."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from engine_support import HUMAN, account, engine, eventually, next_delivery

from humanwire.server.config import SHARED_SMS_NUMBER
from humanwire.server.engine import Account, Engine, holding
from humanwire.server.errors import CallTimeout, Conflict, InvalidToNumber, NotFound
from humanwire.types import (
    CallConversationEndedEvent,
    CallRequest,
    PhoneCallRequest,
    SandboxCallOutcomeRequest,
    SandboxInboundCallRequest,
)

__all__ = ["account", "engine"]

TRANSFER = "+13125550177"


def call(wait: bool = True, **changes: object) -> CallRequest:
    return CallRequest.model_validate(
        {"prompt": "Ask whether the deploy may go ahead.", "to": HUMAN, "waitForCallEnd": wait}
        | changes
    )


def outcome(kind: str, summary: str | None = None) -> SandboxCallOutcomeRequest:
    return SandboxCallOutcomeRequest.model_validate({"outcome": kind, "summary": summary})


async def test_call_without_waiting_is_pending_then_ends_with_event(
    engine: Engine, account: Account
) -> None:
    response = await engine.place_call(account, call(wait=False))
    assert (response.status, response.outcome) == ("pending", None)
    delivery = await next_delivery(engine, account)
    assert (delivery.kind, delivery.channel, delivery.to) == ("call", "call", HUMAN)
    assert delivery.text == "Ask whether the deploy may go ahead."
    ended = await engine.sandbox_end_call(
        account, response.interaction_id, outcome("completed", "They said yes.")
    )
    assert (ended.status, ended.outcome, ended.summary) == ("ended", "completed", "They said yes.")
    assert (ended.from_, ended.to, ended.error) == (SHARED_SMS_NUMBER, HUMAN, None)
    status = await engine.interaction_status(account, response.interaction_id)
    assert isinstance(status.result, CallConversationEndedEvent)
    assert status.result.payload.summary == "They said yes."
    events = await engine.webhooks.events(account)
    assert [e["eventType"] for e in events] == ["call.conversation.ended"]


async def test_wait_for_call_end_holds_until_the_callee_hangs_up(
    engine: Engine, account: Account
) -> None:
    held = asyncio.create_task(engine.place_call(account, call()))
    delivery = await next_delivery(engine, account)
    assert delivery.interaction_id is not None
    await asyncio.sleep(0.05)
    assert not held.done()
    await engine.sandbox_end_call(account, delivery.interaction_id, outcome("completed"))
    response = await held
    assert (response.status, response.outcome) == ("ended", "completed")
    assert response.summary == "The call was completed."


async def test_no_answer_carries_the_error_text(engine: Engine, account: Account) -> None:
    held = asyncio.create_task(engine.place_call(account, call()))
    delivery = await next_delivery(engine, account)
    assert delivery.interaction_id is not None
    await engine.sandbox_end_call(account, delivery.interaction_id, outcome("no_answer"))
    response = await held
    assert (response.outcome, response.error) == ("no_answer", "human did not respond")


async def test_transferred_summary_names_the_transfer_number(
    engine: Engine, account: Account
) -> None:
    held = asyncio.create_task(engine.place_call(account, call(transferTo=TRANSFER)))
    delivery = await next_delivery(engine, account)
    assert delivery.interaction_id is not None
    await engine.sandbox_end_call(
        account, delivery.interaction_id, outcome("transferred", "Wanted a person.")
    )
    response = await held
    assert response.outcome == "transferred"
    assert response.summary is not None
    assert response.summary.startswith("Wanted a person.")
    assert TRANSFER in response.summary


async def test_ending_twice_or_ending_a_message_is_refused(
    engine: Engine, account: Account
) -> None:
    response = await engine.place_call(account, call(wait=False))
    await engine.sandbox_end_call(account, response.interaction_id, outcome("completed"))
    with pytest.raises(Conflict):
        await engine.sandbox_end_call(account, response.interaction_id, outcome("completed"))
    other, _ = await engine.accounts.create("other")
    with pytest.raises(NotFound):
        await engine.sandbox_end_call(other, response.interaction_id, outcome("completed"))


async def test_phone_call_times_out_and_is_not_retried(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The calls role's limit only (the config is the runtime's, fixed at construction).
    monkeypatch.setattr(engine.calls, "_config", replace(engine.config, phone_call_limit=0.15))
    request = PhoneCallRequest(message="Call and ask.", to=HUMAN)
    with pytest.raises(CallTimeout) as caught:
        await engine.phone_call(account, request)
    assert caught.value.message == "timeout"
    assert caught.value.status == 504
    interaction = (await engine.list_interactions(account))[0]
    assert interaction.status == "ended"
    assert interaction.result is None
    with pytest.raises(Conflict):
        await engine.sandbox_end_call(account, interaction.interaction_id, outcome("completed"))
    assert len(await engine.list_sandbox_deliveries(account)) == 1  # placed once, never again


async def test_phone_call_applies_service_transfer_number(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_TRANSFER_NUMBER", TRANSFER)
    held = asyncio.create_task(
        engine.phone_call(account, PhoneCallRequest(message="Call.", to=HUMAN))
    )
    delivery = await next_delivery(engine, account)
    assert delivery.interaction_id is not None
    await engine.sandbox_end_call(account, delivery.interaction_id, outcome("transferred"))
    response = await held
    assert response.summary is not None and TRANSFER in response.summary
    monkeypatch.setenv("SERVICE_TRANSFER_NUMBER", "+15555550100")  # not a routable number
    with pytest.raises(InvalidToNumber):
        await engine.phone_call(account, PhoneCallRequest(message="Call.", to=HUMAN))


async def test_calls_go_out_from_the_reserved_number(engine: Engine, account: Account) -> None:
    await engine.numbers.reserve_from_pool(account, "+16175550142")
    response = await engine.place_call(account, call(wait=False))
    ended = await engine.sandbox_end_call(account, response.interaction_id, outcome("completed"))
    assert ended.from_ == "+16175550142"


async def test_inbound_call_to_reserved_number_emits_summary_event(
    engine: Engine, account: Account
) -> None:
    await engine.numbers.reserve_from_pool(account, "+16175550142")
    request = SandboxInboundCallRequest.model_validate(
        {"from": "+14155550188", "to": "+16175550142", "summary": "Caller asked for a refund."}
    )
    await engine.sandbox_inbound_call(account, request)
    interaction = (await engine.list_interactions(account))[0]
    assert (interaction.kind, interaction.channel, interaction.status) == ("call", "call", "ended")
    assert isinstance(interaction.result, CallConversationEndedEvent)
    events = await engine.webhooks.events(account)
    assert events[0]["eventType"] == "call.conversation.ended"
    assert events[0]["payload"] == {
        "interactionId": interaction.interaction_id,
        "summary": "Caller asked for a refund.",
        "from": "+14155550188",
        "to": "+16175550142",
    }


async def test_inbound_call_to_a_number_not_reserved_is_not_found(
    engine: Engine, account: Account
) -> None:
    other, _ = await engine.accounts.create("other")
    await engine.numbers.reserve_from_pool(other, "+16175550142")
    request = SandboxInboundCallRequest.model_validate(
        {"from": "+14155550188", "to": "+16175550142", "summary": "Hello"}
    )
    with pytest.raises(NotFound):
        await engine.sandbox_inbound_call(account, request)
    assert await engine.webhooks.events(other) == []


async def test_a_call_whose_end_never_comes_is_ended_at_its_limit(
    engine: Engine, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nobody ends the call (the carrier's callback lost): its window step, due a little
    # past the longest a call lasts, ends it as a timeout on whichever process holds it.
    monkeypatch.setattr(holding, "CALL_LONGEST", 0.0)
    monkeypatch.setattr(holding, "CALL_LIMIT_AFTER", 0.3)
    response = await engine.place_call(account, call(wait=False))

    async def ended() -> bool:
        record = await engine.store.get_interaction(response.interaction_id)
        return record is not None and record.status == "ended"

    await eventually(ended, timeout=15)
    record = await engine.store.get_interaction(response.interaction_id)
    assert record is not None and record.outcome == "timeout"
    assert await engine.store.count_steps() == 0


async def test_a_call_that_ends_leaves_no_step(engine: Engine, account: Account) -> None:
    response = await engine.place_call(account, call(wait=False))
    assert await engine.store.count_steps() == 1  # its limit, written with it
    await engine.sandbox_end_call(account, response.interaction_id, outcome("completed"))
    assert await engine.store.count_steps() == 0
