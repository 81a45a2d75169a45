"""The SQL both stores share: statements written once (``statements``), records to
values and rows to records (``rows``), the methods written once on a small executor
(``store.SQLStore``), and the SQL files shipped in the package (``scripts``)."""

from __future__ import annotations

from .statements import INBOUND_COLUMNS, INTERACTION_COLUMNS, Statements
from .store import SQLStore, Transaction

__all__ = ["INBOUND_COLUMNS", "INTERACTION_COLUMNS", "SQLStore", "Statements", "Transaction"]
