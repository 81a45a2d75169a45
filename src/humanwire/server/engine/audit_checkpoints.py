"""Checkpoints of the accounts' audit heads, signed with the service's key (``[audit]
signing_key``; ``approvals.checkpoints`` says what is signed and how it is checked).

One step of the schedule (``audit.checkpoint``) for every account, run by whichever
replica claims it: each head that moved past its account's latest checkpoint is signed,
stored and published as an ``audit.checkpoint`` event; the step then arms itself again
``audit_checkpoint_every`` seconds on. Every start arms it at once (arming never puts it
off), so a head is signed soon after a restart too.

Before it signs a head the step checks that the entries since the latest checkpoint
follow from it and end at the head: a log written behind the service's back since then
is not signed (the service never vouches for it), and the refusal is logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..approvals.audit import GENESIS, audit_time, read_log, verify
from ..approvals.checkpoints import CHECKPOINT_EVENT, Checkpoint, CheckpointSigner
from ..background.outbox import Outbox
from ..background.schedule import Schedule
from ..config import ServiceConfig
from ..store.protocol import Store
from ..store.records import StepRecord
from ..telemetry import log_event

__all__ = ["CHECKPOINT_STEP", "AuditCheckpoints"]

logger = logging.getLogger("humanwire.audit")

CHECKPOINT_STEP = "audit.checkpoint"
"""The schedule's step that takes the checkpoints (one, keyed ``""``)."""


class AuditCheckpoints:
    """Takes the accounts' checkpoints (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        schedule: Schedule,
        outbox: Outbox,
        signer: CheckpointSigner,
        every: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.schedule = schedule
        self.outbox = outbox
        self.signer = signer
        self.every = every
        self.clock = clock
        schedule.handlers[CHECKPOINT_STEP] = self._step

    @classmethod
    def configured(
        cls, config: ServiceConfig, store: Store, schedule: Schedule, outbox: Outbox
    ) -> AuditCheckpoints | None:
        """The checkpoints of a service with a signing key (None without one). Without
        ``cryptography`` installed: ``RuntimeError`` saying which extra to install."""
        if config.audit_signing_key is None:
            return None
        signer = CheckpointSigner(config.audit_signing_key)
        return cls(store, schedule, outbox, signer, config.audit_checkpoint_every)

    async def start(self) -> None:
        await self.schedule.arm(CHECKPOINT_STEP, "", self.clock())

    async def take(self) -> list[Checkpoint]:
        """A checkpoint of each head that moved past its account's latest one, stored
        and published; the ones taken (the step's work, and a checkpoint on demand)."""
        taken: list[Checkpoint] = []
        for account_id, head, signed in await self.store.unsigned_audit_heads():
            if not await self._follows(account_id, head, signed):
                continue
            checkpoint = self.signer.sign(account_id, *head, audit_time(self.clock()))
            if not await self.store.insert_audit_checkpoint(checkpoint):
                continue  # another replica signed this head meanwhile
            event = {"eventType": CHECKPOINT_EVENT, "payload": checkpoint.wire()}
            await self.outbox.emit(account_id, event, None)
            log_event(
                logger,
                "audit.checkpoint",
                request_id=False,
                account_id=account_id,
                sequence=checkpoint.sequence,
            )
            taken.append(checkpoint)
        return taken

    async def _follows(
        self, account_id: str, head: tuple[int, str], signed: tuple[int, str] | None
    ) -> bool:
        after = signed or (0, GENESIS)
        entries = [entry async for entry in read_log(self.store, account_id, after[0])]
        breaks = verify(entries, head=head, after=after)
        if breaks:
            log_event(
                logger,
                "audit.checkpoint_refused",
                request_id=False,
                level=logging.ERROR,
                account_id=account_id,
                sequence=breaks[0].sequence,
                problem=breaks[0].problem,
            )
        return not breaks

    async def _step(self, step: StepRecord) -> None:
        try:
            await self.take()
        finally:  # the next round is armed even when this one failed (the database away)
            await self.schedule.arm(CHECKPOINT_STEP, "", self.clock() + self.every)
