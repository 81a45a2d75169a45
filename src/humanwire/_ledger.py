"""Consumed approvals: an approved action runs once, however often its approval arrives.

A host consumes an approval (by the interaction id of its form) just before the action
runs; a second consume of the same id is refused, so a retried webhook, two receivers
racing, or a replayed paused run runs nothing. Framework-neutral and blocking (the
CrewAI adapter calls it from blocking code; an async caller wraps it in a thread).

- :class:`MemoryLedger`: this process only.
- :class:`FileLedger`: one file per consumed approval, created exclusively
  (``O_CREAT | O_EXCL``): of two processes consuming at once, exactly one succeeds.
- :class:`SQLiteLedger`: a table in a SQLite file (a unique key; ``INSERT OR IGNORE``),
  e.g. the file a framework already keeps its paused runs in.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = ["ApprovalLedger", "FileLedger", "MemoryLedger", "SQLiteLedger"]

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@runtime_checkable
class ApprovalLedger(Protocol):
    """Where approvals are consumed: ``consume`` is true the first time for an
    interaction id and false after that, across everything sharing the ledger."""

    def consume(self, interaction_id: str) -> bool: ...


class MemoryLedger:
    """Consumed approvals of this process."""

    def __init__(self) -> None:
        self._consumed: set[str] = set()
        self._lock = threading.Lock()

    def consume(self, interaction_id: str) -> bool:
        with self._lock:
            if interaction_id in self._consumed:
                return False
            self._consumed.add(interaction_id)
            return True


class FileLedger:
    """Consumed approvals as files in ``directory``, one per interaction."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def consume(self, interaction_id: str) -> bool:
        # The id comes from a webhook body: never let it name another file.
        if not _SAFE_ID.fullmatch(interaction_id):
            raise ValueError(f"not an interaction id: {interaction_id!r}")
        path = self.directory / f"{interaction_id}.consumed"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        os.close(fd)
        return True


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
