"""Storage of the service: the ``Store`` interface, its SQLite implementation (the
default) and, with the ``postgres`` extra, its PostgreSQL one (``store.postgres``)."""

from __future__ import annotations

from .protocol import Store
from .sqlite import SQLiteStore

__all__ = ["SQLiteStore", "Store", "is_database_url", "open_store", "redact", "schema_version"]

_URL_SCHEMES = ("postgresql://", "postgres://")


def is_database_url(db: str) -> bool:
    """True for a PostgreSQL URL (``postgresql://…``), False for a SQLite path."""
    return str(db).startswith(_URL_SCHEMES)


def open_store(db: str, *, pool_size: int | None = None) -> Store:
    """The store ``db`` names: a PostgreSQL URL (the ``postgres`` extra) or a SQLite
    file (``:memory:`` for a throwaway one). Either brings its schema up to date.
    ``pool_size``: PostgreSQL's connections at most (the store's default if None)."""
    if is_database_url(db):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:  # psycopg missing
            raise RuntimeError(
                "a postgresql:// database needs the postgres extra: "
                'pip install "humanwire[postgres]"'
            ) from exc
        if pool_size is None:
            return PostgresStore(str(db))
        return PostgresStore(str(db), max_size=pool_size)
    return SQLiteStore(db)


async def schema_version(store: Store) -> int:
    """The newest migration ``store`` recorded (after ``open_store`` brought it up to date:
    the newest of the series, ``migrations.LATEST``)."""
    version: int = await store.schema_version()
    return version


def redact(db: str) -> str:
    """``db`` fit to print: a URL's password replaced by ``***``."""
    if not is_database_url(db):
        return db
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(db)
    if parts.password is None:
        return db
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
