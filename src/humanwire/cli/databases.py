"""Which database a command works on: ``--db``, the environment, or the default file."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["DB_HELP", "db_of", "default_db", "is_database_url"]


DB_HELP = (
    "SQLite file or postgresql:// URL (HUMANWIRE_DB or HUMANWIRE_DATABASE_URL; "
    "default ~/.humanwire/humanwire.db)"
)


def default_db() -> str:
    from humanwire.server.runtime.embedded import embedded_home

    return str(embedded_home() / "humanwire.db")


def is_database_url(db: str) -> bool:
    from humanwire.server.store import is_database_url as is_url

    return is_url(db)


def db_of(args: argparse.Namespace) -> str:
    """``--db``, else ``HUMANWIRE_DB`` / ``HUMANWIRE_DATABASE_URL``, else the default
    file; a path with ``~`` expanded, a URL as given."""
    db = args.db or os.environ.get("HUMANWIRE_DB") or os.environ.get("HUMANWIRE_DATABASE_URL")
    db = db or str(default_db())
    return db if is_database_url(db) else str(Path(db).expanduser())
