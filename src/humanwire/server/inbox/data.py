"""Gathers what the inbox page shows from the engine, for one account."""

from __future__ import annotations

from ..config import CHANNELS
from ..delivery.chat import CHAT_CHANNELS
from ..engine import Account, Engine
from .views import InboundMessage, InboxData, Windows, conversations_of

__all__ = ["DELIVERY_LIMIT", "INTERACTION_LIMIT", "gather_inbox"]

INTERACTION_LIMIT = 200
DELIVERY_LIMIT = 200
"""The newest deliveries shown; a development inbox, not an archive."""


async def _windows(engine: Engine, account: Account) -> dict[str, Windows]:
    # The wire status carries no windows; the store's records do.
    return {
        r.id: Windows(r.wait_deadline, r.close_deadline)
        for r in await engine.store.list_interactions(account.id, INTERACTION_LIMIT)
    }


async def _inbound(engine: Engine, account: Account) -> list[InboundMessage]:
    return [
        InboundMessage(
            id=m.id,
            channel=m.channel,
            from_=m.from_addr,
            to=m.to_addr,
            body=m.body,
            interaction_id=m.interaction_id,
            created_at=m.created_at,
        )
        for m in await engine.webhooks.inbound(account)
    ]


async def gather_inbox(
    engine: Engine,
    account: Account,
    *,
    channel: str | None,
    recipient: str | None,
    sandbox: bool = True,
) -> InboxData:
    everything = await engine.sandbox.deliveries(account)
    shown = [
        d
        for d in everything
        if (channel is None or d.channel == channel) and (recipient is None or d.to == recipient)
    ]
    return InboxData(
        deliveries=shown[:DELIVERY_LIMIT],
        interactions={
            s.interaction_id: s
            for s in await engine.sandbox.list_interactions(account, INTERACTION_LIMIT)
        },
        windows=await _windows(engine, account),
        inbound=await _inbound(engine, account),
        webhook_log=list(await engine.webhooks.deliveries(account)),
        numbers=await engine.numbers.of(account),
        conversations=conversations_of(everything),
        channel=channel,
        recipient=recipient,
        sandbox=sandbox,
        live=frozenset(c for c in (*CHANNELS, *CHAT_CHANNELS) if not engine.sandbox.answers(c)),
        approvals=await engine.approvals.inbox_approvals(account, INTERACTION_LIMIT),
    )
