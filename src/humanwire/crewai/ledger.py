"""Consumed approvals for CrewAI's blocking hooks and flows: an approved action runs
once, however often its approval arrives.

The memory and file ledgers are the shared ones (``humanwire._pauses``) through their
blocking face; only the SQLite ledger is CrewAI's own, a table in the file a
``SQLiteFlowPersistence`` already keeps its paused flows in (nothing shared keeps one).
"""

from __future__ import annotations

import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path

from humanwire._pauses import (
    BlockingApprovalLedger,
    BlockingLedger,
    FileApprovalLedger,
    MemoryApprovalLedger,
)

__all__ = ["ApprovalLedger", "FileLedger", "MemoryLedger", "SQLiteLedger"]

ApprovalLedger = BlockingApprovalLedger
"""Where approvals are consumed: ``consume(interaction_id)`` is true the first time for
an interaction id and false after that, across everything sharing the ledger."""


class MemoryLedger(BlockingLedger):
    """Consumed approvals of this process."""

    def __init__(self) -> None:
        super().__init__(MemoryApprovalLedger())


class FileLedger(BlockingLedger):
    """Consumed approvals as files in ``directory``, one per interaction, created
    exclusively (``O_CREAT | O_EXCL``): of two processes consuming at once, exactly one
    succeeds."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__(FileApprovalLedger(directory))
        self.directory = Path(directory)


class SQLiteLedger:
    """Consumed approvals in the ``table`` of the SQLite file at ``path`` (created on
    first use). Several processes may share the file: the row's unique key decides."""

    def __init__(
        self, path: str | os.PathLike[str], *, table: str = "humanwire_consumed_approvals"
    ) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", table):
            raise ValueError(f"not a table name: {table!r}")
        self.path = Path(path)
        self.table = table
        with closing(self._connect()) as db, db:
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {table} ("
                "interaction_id TEXT PRIMARY KEY, "
                "consumed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )

    def _connect(self) -> sqlite3.Connection:
        # A writer waits for another's lock instead of failing at once.
        return sqlite3.connect(self.path, timeout=30)

    def consume(self, interaction_id: str) -> bool:
        if not interaction_id:
            raise ValueError("an interaction id is required")
        with closing(self._connect()) as db, db:
            cursor = db.execute(
                f"INSERT OR IGNORE INTO {self.table} (interaction_id) VALUES (?)",
                (interaction_id,),
            )
            return cursor.rowcount == 1
