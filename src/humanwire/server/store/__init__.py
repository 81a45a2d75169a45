"""Storage of the service: the ``Store`` interface and its SQLite implementation."""

from .base import Store
from .sqlite import SQLiteStore

__all__ = ["SQLiteStore", "Store"]
