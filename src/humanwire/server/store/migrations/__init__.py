"""One migration series for both stores: ``NNNN_name.sql`` in this folder, version ``NNNN``,
applied in order, each once per database, recorded in ``schema_migrations (version,
applied_at)`` on SQLite and PostgreSQL alike.

A migration both databases run as written is one file, ``NNNN_name.sql``; where their
words differ (``REAL`` / ``DOUBLE PRECISION``, ``INSERT OR IGNORE`` / ``ON CONFLICT``), it
is a file per dialect, ``NNNN_name.sqlite.sql`` and ``NNNN_name.postgres.sql``. A version
with no file for a dialect (PostgreSQL's replicas, 0002 and 0003) is recorded there as
applied with nothing run. A released migration is never edited (a database that ran it
never runs it again): ``tests/server/test_store_migrations.py`` pins their text.

:func:`run_migrations` is the one runner; each store gives it a :class:`MigrationLedger`
(its connection's applied versions, and how it runs a script and records it in the same
transaction).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    # importlib.resources.abc from Python 3.11; importlib.abc's is the same class
    from importlib.abc import Traversable

__all__ = [
    "DIALECTS",
    "LATEST",
    "SERIES",
    "Dialect",
    "Migration",
    "MigrationLedger",
    "load_series",
    "pending",
    "run_migrations",
]

Dialect = Literal["sqlite", "postgres"]
DIALECTS: tuple[Dialect, ...] = ("sqlite", "postgres")

_NAME = re.compile(r"(\d{4})_(\w+?)(?:\.(sqlite|postgres))?\.sql")


@dataclass(frozen=True)
class Migration:
    """One version of the series: its name and its script in each dialect."""

    version: int
    name: str
    scripts: Mapping[Dialect, str]
    """The SQL per dialect; a dialect missing here runs nothing for this version."""

    def script(self, dialect: Dialect) -> str:
        return self.scripts.get(dialect, "")


def load_series(folder: Traversable) -> tuple[Migration, ...]:
    """The migrations of ``folder``, checked: numbered 1, 2, 3, ... with one name each,
    and a shared file never beside a dialect's for one version."""
    found: dict[int, tuple[str, dict[Dialect, str]]] = {}
    shared: set[int] = set()
    for entry in sorted(folder.iterdir(), key=lambda entry: entry.name):
        if not entry.name.endswith(".sql"):
            continue
        matched = _NAME.fullmatch(entry.name)
        if matched is None:
            raise RuntimeError(f"migration {entry.name!r} is not named NNNN_name[.dialect].sql")
        version, name, dialect = int(matched[1]), matched[2], matched[3]
        text = entry.read_text(encoding="utf-8")
        known_name, scripts = found.setdefault(version, (name, {}))
        if known_name != name:
            raise RuntimeError(f"migration {version:04d} has two names: {known_name}, {name}")
        targets: tuple[Dialect, ...] = DIALECTS if dialect is None else (dialect,)  # type: ignore[assignment]
        if dialect is None:
            shared.add(version)
        if version in shared and (dialect is not None or scripts):
            raise RuntimeError(f"migration {version:04d}: a shared file beside a dialect's")
        for target in targets:
            scripts[target] = text
    versions = sorted(found)
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"migration versions {versions} are not 1, 2, 3, ... in order")
    return tuple(Migration(v, found[v][0], found[v][1]) for v in versions)


SERIES: tuple[Migration, ...] = load_series(files(__name__))
"""Every migration, in order."""
LATEST: int = SERIES[-1].version
"""The version a database this code brought up to date is at."""


class MigrationLedger(Protocol):
    """A store's side of the runner, on a connection the store holds for the run (under
    its lock: PostgreSQL's advisory lock, SQLite's write transaction)."""

    def applied(self) -> set[int]:
        """The versions recorded (creating ``schema_migrations`` if it is missing)."""
        ...

    def apply(self, migration: Migration, script: str) -> None:
        """Runs ``script`` (perhaps empty) and records ``migration.version``."""
        ...


def pending(applied: Collection[int]) -> list[int]:
    """The versions of the series not in ``applied``, in order."""
    return [migration.version for migration in SERIES if migration.version not in applied]


def run_migrations(dialect: Dialect, ledger: MigrationLedger) -> list[int]:
    """Applies, in order, every migration ``ledger`` has not recorded; returns their
    versions."""
    applied = ledger.applied()
    ran = []
    for migration in SERIES:
        if migration.version in applied:
            continue
        ledger.apply(migration, migration.script(dialect))
        ran.append(migration.version)
    return ran
