"""The engine's side of the providers' inbound port (``delivery.port.InboundPort``).

``EngineProviderPort`` is what a provider is given in place of the engine: each call
goes to the role that owns it (``engine.inbound``, ``engine.delivery``, ``engine.links``,
``engine.approvals``, ...) or is a store read the engine would make, so a provider
reaches nothing else. ``register_providers`` is the wiring's other half: the
providers ``delivery.real.real_providers`` built take over the channels they declare,
and the numbers come from their source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from humanwire.types import CallOutcome, DeliveryStatus, Speaker

from .numbers import NUMBER_SCOPE

if TYPE_CHECKING:
    from humanwire.types import Form

    from ..background.schedule import Schedule
    from ..delivery.port import InboundText, ProviderRegistration, ProviderState
    from ..store.records import ApproverRecord, InboundRecord, InteractionRecord, NumberRecord
    from ..telemetry import Metrics
    from . import Engine

__all__ = ["EngineProviderPort", "register_providers"]


def register_providers(engine: Engine, wiring: ProviderRegistration) -> None:
    """Each channel of ``wiring`` goes through its provider from now on (the others keep
    the sandbox); reserved numbers come from ``wiring.numbers`` when it has a source."""
    for channel, provider in wiring.channels.items():
        engine.use_provider(provider, [channel])
    if wiring.numbers is not None:
        engine.use_numbers(wiring.numbers)


class EngineProviderPort:
    """``InboundPort`` over ``engine``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # -- what the provider keeps and needs ------------------------------------------------
    @property
    def state(self) -> ProviderState:
        return self._engine.runtime.store

    @property
    def schedule(self) -> Schedule:
        return self._engine.runtime.schedule

    @property
    def metrics(self) -> Metrics:
        return self._engine.metrics

    @property
    def phone_call_limit(self) -> float:
        return float(self._engine.runtime.config.phone_call_limit)

    # -- reads -------------------------------------------------------------------------
    async def interaction(self, interaction_id: str) -> InteractionRecord | None:
        return await self._engine.runtime.store.get_interaction(interaction_id)

    async def interaction_by_ref(self, ref: str) -> InteractionRecord | None:
        return await self._engine.runtime.store.interaction_by_provider_ref(ref)

    async def interaction_by_reply_token(self, token: str) -> InteractionRecord | None:
        return await self._engine.runtime.store.interaction_by_reply_token(token)

    async def number_by_phone(self, phone_number: str) -> NumberRecord | None:
        return await self._engine.runtime.store.number_by_phone(phone_number)

    async def number_seller(self, phone_number: str) -> str | None:
        kept = await self._engine.runtime.store.get_provider_state(NUMBER_SCOPE, phone_number)
        seller = kept.get("provider") if kept is not None else None
        return str(seller) if seller else None

    def form_of(self, record: InteractionRecord) -> Form:
        return self._engine.interactions.form_of(record)

    async def account_of_key(self, api_key: str) -> str | None:
        account = await self._engine.accounts.authenticate(api_key)
        return account.id if account is not None else None

    # -- what came back ------------------------------------------------------------------
    async def receive_text(
        self, text: InboundText, account_id: str | None = None
    ) -> InboundRecord | None:
        return await self._engine.inbound.receive_text(text, account_id=account_id)

    async def receive_reply(
        self, text: InboundText, thread: InteractionRecord
    ) -> InboundRecord | None:
        return await self._engine.inbound.receive_reply(text, thread)

    async def receive_unsolicited(self, text: InboundText, account_id: str) -> InboundRecord | None:
        return await self._engine.inbound.receive_unsolicited(text, account_id)

    async def delivery_status(self, ref: str, status: DeliveryStatus) -> None:
        await self._engine.delivery.delivery_status(ref, status)

    async def open_inbound_call(
        self, account_id: str, *, from_addr: str, to_addr: str
    ) -> InteractionRecord:
        return await self._engine.inbound.open_inbound_call(
            account_id, from_addr=from_addr, to_addr=to_addr
        )

    async def end_call(
        self,
        record: InteractionRecord,
        *,
        outcome: CallOutcome,
        summary: str,
        transcript: Sequence[tuple[Speaker, str]] | None = None,
    ) -> None:
        await self._engine.inbound.end_call(
            record, outcome=outcome, summary=summary, transcript=transcript
        )

    async def submit_form(self, token: str, values: Mapping[str, str]) -> None:
        await self._engine.links.submit_form(token, dict(values))

    # -- approvals -----------------------------------------------------------------------
    async def button_approver(self, channel: str, interaction_id: str, to_addr: str) -> int | None:
        return await self._engine.approvals.button_approver(channel, interaction_id, to_addr)

    async def decide_by_button(
        self, channel: str, interaction_id: str, position: int, user: str, decision: str
    ) -> tuple[str, str]:
        return await self._engine.approvals.decide_by_button(
            channel, interaction_id, position, user, decision
        )

    async def email_approver(self, token: str) -> ApproverRecord | None:
        return await self._engine.approvals.email_approver(token)

    async def decide_by_email_reply(
        self, approver: ApproverRecord, body: str, *, signed: bool
    ) -> str:
        return await self._engine.approvals.decide_by_email_reply(approver, body, signed=signed)
