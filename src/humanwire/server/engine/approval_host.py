"""What the approvals role (``engine.approvals``) is given of the rest of the engine: the
runtime it reads and writes through, the registries it plugs into, and the few steps of
every send it reuses (opening, delivering and holding an interaction, the account checks).
Written down as a ``Protocol`` so the seam is one list a reader can check: approvals reach
nothing else of the engine, and the engine reaches approvals only through ``Engine``'s
delegating methods and what they registered."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..background.schedule import Schedule
from ..config import ServiceConfig
from ..delivery import Provider, WhatsAppTemplate
from ..store import Store
from ..store.records import InboundRecord, InteractionOutcome, InteractionRecord
from ._common import Account, Channel
from .context import IdempotentRun, NewInteraction, SendContext
from .deadlines import WindowCloser
from .holding import AcceptedBody
from .holds import Hold
from .human import InboundRegistry, InboundText

__all__ = ["ApprovalHost"]


class ApprovalHost(Protocol):
    """The engine as approvals see it (``Engine`` is one)."""

    # -- the runtime --------------------------------------------------------------------
    store: Store
    schedule: Schedule
    config: ServiceConfig
    providers: dict[str, Provider]
    provider: Provider

    # -- where approvals register (``ApprovalAccess.__init__``) ------------------------------
    inbound: InboundRegistry
    window_closers: dict[str, WindowCloser]
    accepted_bodies: dict[str, AcceptedBody]

    # -- the account and its interactions ------------------------------------------------
    async def _account(self, account_id: str) -> Account: ...
    async def _require_active(self, account: Account) -> None: ...
    async def _check_send(self, account: Account, text: str, to: str) -> None: ...
    async def _current(self, interaction_id: str) -> InteractionRecord: ...
    async def _interaction_of(
        self, account: Account, interaction_id: str, named: InteractionRecord | None = None
    ) -> InteractionRecord: ...
    def _notify(self, account_id: str, kind: Any, item_id: str, *, publish: bool = True) -> None:
        """Tells the inbox's live streams (and other replicas) of a change."""

    def check_sandbox_answers(self, channel: str, field: str | None = None) -> None: ...

    # -- a send's steps: opened, delivered, held, answered -------------------------------
    async def _open_interaction(
        self,
        account: Account,
        new: NewInteraction,
        *,
        holding: bool = False,
        context: SendContext = ...,
    ) -> tuple[InteractionRecord, bool, Hold | None]: ...
    async def _create_interaction(
        self,
        account: Account,
        new: NewInteraction,
        *,
        run: IdempotentRun | None = None,
        hold_for: SendContext | None = None,
    ) -> tuple[InteractionRecord, Hold | None]: ...
    async def _send_out(
        self,
        record: InteractionRecord,
        resumed: bool,
        hold: Hold | None,
        deliver: Callable[[], Awaitable[None]],
    ) -> None: ...
    async def _deliver(
        self,
        record: InteractionRecord,
        text: str,
        *,
        form_url: str | None = None,
        hold: Hold | None = None,
        template: WhatsAppTemplate | None = None,
    ) -> None: ...
    async def _hold(self, hold: Hold, limit: float | None = None) -> InteractionRecord | None: ...
    async def _answer(
        self,
        record: InteractionRecord,
        event: dict[str, Any],
        *,
        outcome: InteractionOutcome | None = None,
        always_emit: bool = False,
        inbound: InboundRecord | None = None,
    ) -> InteractionRecord | None: ...
    def _disarm(self, interaction_id: str) -> None: ...

    # -- senders, and a text back to the person -------------------------------------------
    def _shared_sender(self, channel: Channel) -> str: ...
    async def _phone_sender(self, account: Account, requested: str | None) -> str: ...
    async def _slack_sender(self, account: Account, requested: str | None) -> str: ...
    async def _text_back(
        self,
        text: InboundText,
        body: str,
        *,
        account_id: str = "",
        interaction_id: str | None = None,
    ) -> None: ...
