"""The store's hot lookups as SQLite plans them: a reply finds the open message it
answers in one index, whatever else the account holds (issue 47: the planner took the
account's index for the order and walked every interaction of the account per reply)."""

from __future__ import annotations

from pathlib import Path

import pytest

from humanwire.server.store.sqlite import SQLiteStore

ACCOUNT_ARGS = ("acct_1", "sms", "+12025550100", "+15550000000")
ANYONE_ARGS = ACCOUNT_ARGS[1:]


@pytest.mark.parametrize(
    ("statement", "args"),
    [
        ("latest_open_message", ACCOUNT_ARGS),
        ("latest_open_message_of_anyone", ANYONE_ARGS),
        ("open_messages", ANYONE_ARGS),
    ],
)
def test_a_reply_finds_its_message_in_one_index(
    tmp_path: Path, statement: str, args: tuple[str, ...]
) -> None:
    store = SQLiteStore(str(tmp_path / "plans.db"))
    try:
        sql = getattr(store.q, statement)
        plan = [row[3] for row in store._db.execute("EXPLAIN QUERY PLAN " + sql, args)]
    finally:
        store.close_now()
    assert plan == [
        "SEARCH interactions USING INDEX interactions_reply "
        "(channel=? AND to_addr=? AND from_addr=?)"
    ], plan
