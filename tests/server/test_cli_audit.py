"""``humanwire audit export | verify`` on both stores: the export is the log as ``GET
/audit`` gives it (each line checkable alone), and ``verify`` names the first entry edited
or removed behind the service's back, on the database and on a copy of a SQLite file."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import psycopg
import pytest

from humanwire.cli import main
from humanwire.server.approvals.audit import GENESIS, verify
from humanwire.server.store import open_store
from humanwire.server.store.records import AuditDraft

APPROVER = {"channel": "sms", "to": "+12025550100"}


def draft(n: int) -> AuditDraft:
    return AuditDraft(
        at=1_764_072_000.0 + n,
        type="approval.decision" if n % 2 else "approval.requested",
        interaction_id=f"int_{n % 2}",
        actor=APPROVER,
        data={"decision": "approve", "comment": f"ok {n} — é"},
    )


async def _seed(database: str, logs: dict[str, int]) -> None:
    store = open_store(database)
    try:
        for account_id, count in logs.items():
            await store.append_audit(account_id, [draft(n) for n in range(1, count + 1)])
    finally:
        await store.close()


def seed(database: str, **logs: int) -> None:
    asyncio.run(_seed(database, logs))


def tamper(database: str, statement: str) -> None:
    """A statement run on the database behind the service's back."""
    if database.startswith("postgresql://"):
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute(statement.encode())
    else:
        with sqlite3.connect(database) as db:
            db.execute(statement)


def audit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["audit", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_export_gives_the_log_as_json_lines_or_one_array(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(database, acct_a=5, acct_b=2)
    code, out, err = audit(capsys, "export", "--db", database, "--account", "acct_a")
    assert code == 0, err
    entries = [json.loads(line) for line in out.splitlines()]
    assert [e["sequence"] for e in entries] == [1, 2, 3, 4, 5]
    assert entries[0]["prev"] == GENESIS and entries[1]["data"]["comment"] == "ok 2 — é"
    assert verify(entries) == []  # an export is checkable with nothing but the rule

    code, out, _ = audit(
        capsys,
        "export",
        "--db",
        database,
        "--account",
        "acct_a",
        "--format",
        "json",
        "--after",
        "3",
    )
    assert code == 0 and [e["sequence"] for e in json.loads(out)] == [4, 5]

    code, out, err = audit(capsys, "export", "--db", database)
    assert code == 2 and out == "" and "acct_a, acct_b" in err


def test_verify_passes_an_intact_log(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed(database, acct_a=4, acct_b=1)
    code, out, err = audit(capsys, "verify", "--db", database)
    assert code == 0, out + err
    assert out.splitlines() == [
        "acct_a: 4 entries, chain intact",
        "acct_b: 1 entries, chain intact",
    ]


def test_verify_names_an_edited_entry(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed(database, acct_a=5, acct_b=3)
    tamper(
        database,
        "UPDATE audit SET entry = replace(entry, 'approve', 'reject') "
        "WHERE account_id = 'acct_a' AND sequence = 3",
    )
    code, out, _ = audit(capsys, "verify", "--db", database)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "acct_a: entry 3: its content does not match its hash (edited?)"
    assert "acct_b: 3 entries, chain intact" in lines


def test_verify_names_a_removed_entry_and_a_removed_last_one(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(database, acct_a=5)
    tamper(database, "DELETE FROM audit WHERE account_id = 'acct_a' AND sequence = 2")
    code, out, _ = audit(capsys, "verify", "--db", database, "--account", "acct_a")
    assert code == 1 and out.startswith("acct_a: entry 2: entry 2 is missing (removed?)")

    seed(database, acct_c=4)
    tamper(database, "DELETE FROM audit WHERE account_id = 'acct_c' AND sequence = 4")
    code, out, _ = audit(capsys, "verify", "--db", database, "--account", "acct_c")
    assert code == 1 and "entry 4: the log ends at entry 3 but had reached 4" in out


def test_verify_with_a_noted_head(database: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed(database, acct_a=3)
    code, out, _ = audit(capsys, "export", "--db", database, "--account", "acct_a")
    *before, last = (json.loads(line) for line in out.splitlines())
    noted = f"{last['sequence']}:{last['hash']}"
    # The last entry removed and the store's own head rewound: only the noted head shows it.
    tamper(database, "DELETE FROM audit WHERE account_id = 'acct_a' AND sequence = 3")
    tamper(
        database,
        f"UPDATE audit_heads SET sequence = 2, hash = '{before[-1]['hash']}' "
        "WHERE account_id = 'acct_a'",
    )
    code, out, _ = audit(capsys, "verify", "--db", database, "--account", "acct_a")
    assert code == 0  # without the noted head the shortened log looks whole
    code, out, _ = audit(capsys, "verify", "--db", database, "--account", "acct_a", "--head", noted)
    assert code == 1
    assert out == (
        "acct_a: entry 3: the log ends at entry 2 but the noted head had reached 3 "
        "(entries removed from its end?)\n"
    )
    code, _, err = audit(capsys, "verify", "--db", database, "--head", "3:nothex")
    assert code == 2 and "--head" in err


def test_verify_names_a_log_whose_head_was_removed(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(database, acct_a=3, acct_b=2)
    tamper(database, "DELETE FROM audit_heads WHERE account_id = 'acct_a'")
    code, out, _ = audit(capsys, "verify", "--db", database)
    assert code == 1
    assert out.splitlines() == [
        "acct_a: entry 3: the store keeps no head for this log (removed behind the service's "
        "back?)",
        "acct_b: 2 entries, chain intact",
    ]


@pytest.mark.parametrize(
    ("statement", "says"),
    [
        (
            "UPDATE audit SET entry = replace(entry, 'ok 4', 'ok 40') WHERE sequence = 4",
            "acct_a: entry 4: its content does not match its hash (edited?)",
        ),
        ("DELETE FROM audit WHERE sequence = 2", "acct_a: entry 2: entry 2 is missing (removed?)"),
    ],
)
def test_verify_on_a_copy_of_a_sqlite_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], statement: str, says: str
) -> None:
    original = tmp_path / "service.db"
    seed(str(original), acct_a=6)
    copy = tmp_path / "copy" / "service.db"
    copy.parent.mkdir()
    shutil.copy(original, copy)  # closed: its writes are in the file itself
    tamper(str(copy), statement)
    code, out, _ = audit(capsys, "verify", "--db", str(copy))
    assert code == 1 and out.splitlines()[0] == says
    code, out, _ = audit(capsys, "verify", "--db", str(original))
    assert code == 0 and out == "acct_a: 6 entries, chain intact\n"


def test_a_missing_database_is_said_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = audit(capsys, "verify", "--db", str(tmp_path / "none.db"))
    assert code == 1 and "no database at" in err
    assert not (tmp_path / "none.db").exists()
