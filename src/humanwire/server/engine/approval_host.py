"""What the approvals role (``engine.approvals``) is given of the rest of the engine: the
runtime it reads and writes through, and the roles whose steps every send takes, which it
takes too (an interaction opened, delivered, held and answered; the account's checks; a
sender; a text back to a person) and where it registers (``inbound``'s lists,
``deadlines.closers``, ``holding.accepted_bodies``). Written down as a ``Protocol`` so the
seam is one list a reader can check: approvals reach nothing else of the engine, and the
engine reaches approvals only through what they registered and ``Engine.approvals``."""

from __future__ import annotations

from typing import Protocol

from .accounts import Accounts
from .holding import Deadlines, Holding
from .human import Inbound
from .interactions import Delivery, Interactions
from .recipients import Recipients
from .runtime import Runtime
from .sandbox import Sandbox
from .sends import Senders

__all__ = ["ApprovalHost"]


class ApprovalHost(Protocol):
    """The engine as approvals see it (``Engine`` is one): its runtime and roles."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def accounts(self) -> Accounts: ...
    @property
    def interactions(self) -> Interactions: ...
    @property
    def delivery(self) -> Delivery: ...
    @property
    def holding(self) -> Holding: ...
    @property
    def deadlines(self) -> Deadlines: ...
    @property
    def senders(self) -> Senders: ...
    @property
    def recipients(self) -> Recipients: ...
    @property
    def inbound(self) -> Inbound: ...
    @property
    def sandbox(self) -> Sandbox: ...
