"""Each approval used once: consumed on the service, bound to the call's action
(:func:`consume_on_service`), and in an :class:`ApprovalLedger` on the adapter's side
(:class:`MemoryApprovalLedger` in one process, :class:`FileApprovalLedger` across
processes sharing a directory); :func:`consume_all` takes a whole pause's."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from humanwire.approval import ApprovalRequest, action_digest_of

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire


@runtime_checkable
class ApprovalLedger(Protocol):
    """Where approvals are consumed: ``consume`` is true the first time for an
    interaction id and false after that, across every process sharing the ledger (atomic:
    of two processes consuming at once, exactly one succeeds)."""

    async def consume(self, interaction_id: str) -> bool: ...


@runtime_checkable
class BlockingApprovalLedger(Protocol):
    """An :class:`ApprovalLedger` for blocking code (CrewAI's hooks and flows): the same
    promise, ``consume`` returning at once."""

    def consume(self, interaction_id: str) -> bool: ...


class BlockingLedger:
    """The blocking face of :class:`MemoryApprovalLedger` or :class:`FileApprovalLedger`
    (their ``consume_now``): one ledger whichever face consumes, so an async and a
    blocking caller sharing it still consume each approval once."""

    def __init__(self, ledger: MemoryApprovalLedger | FileApprovalLedger) -> None:
        self.ledger = ledger

    def consume(self, interaction_id: str) -> bool:
        return self.ledger.consume_now(interaction_id)


class MemoryApprovalLedger:
    """Consumed approvals of this process."""

    def __init__(self) -> None:
        self._consumed: set[str] = set()
        self._lock = threading.Lock()

    def consume_now(self, interaction_id: str) -> bool:
        """``consume`` for blocking code (a framework whose hooks block: CrewAI)."""
        with self._lock:
            if interaction_id in self._consumed:
                return False
            self._consumed.add(interaction_id)
            return True

    async def consume(self, interaction_id: str) -> bool:
        return self.consume_now(interaction_id)


class FileApprovalLedger:
    """Consumed approvals as files in ``directory``, one per interaction id (named by its
    SHA-256, so no id names another file), created with ``O_CREAT | O_EXCL``: atomic
    across processes on one machine or a shared volume."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def consume_now(self, interaction_id: str) -> bool:
        """``consume`` for blocking code (one file created: no event loop is held up)."""
        path = self.directory / f"{hashlib.sha256(interaction_id.encode()).hexdigest()}.consumed"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        os.close(fd)
        return True

    async def consume(self, interaction_id: str) -> bool:
        return self.consume_now(interaction_id)


async def consume_on_service(
    client: AsyncHumanWire, approved: Mapping[str, ApprovalRequest]
) -> bool:
    """Consume on the service each approved call's approval (interaction id → the call
    as asked: its digest is presented), in a fixed order, before any of them runs:
    ``False`` (run none) at the first one used already (``already_consumed``: the pause
    was resumed before) or refused as not approved."""
    from humanwire.errors import AlreadyConsumedError, NotApprovedError

    for interaction_id in sorted(approved):
        try:
            await client.approvals.consume(
                interaction_id, action_digest=action_digest_of(approved[interaction_id])
            )
        except (AlreadyConsumedError, NotApprovedError):
            return False
    return True


async def consume_all(ledger: ApprovalLedger, interaction_ids: Iterable[str]) -> bool:
    """Consume every approval of a pause before anything of it runs, in a fixed order, so
    two resumes racing for the same pause cannot each win a part: ``False`` (stop) at the
    first one consumed already."""
    for interaction_id in sorted(interaction_ids):
        if not await ledger.consume(interaction_id):
            return False
    return True
