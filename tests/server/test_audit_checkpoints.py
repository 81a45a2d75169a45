"""The audit chain anchored, on both stores: the service's signed checkpoints of each
account's head (``AuditCheckpoints.take``, the step's work), stored and published as
``audit.checkpoint`` events; ``humanwire audit verify --public-key`` names the entry of a
log rewritten behind the service's back and consistently re-hashed (which the chain alone
cannot show), and the head shows an entry appended past it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
import rfc8785

from humanwire.cli import main
from humanwire.server.approvals.audit import GENESIS, entry_hash
from humanwire.server.approvals.checkpoints import (
    Checkpoint,
    CheckpointSigner,
    checkpoint_marks,
    generate_key_pair,
)
from humanwire.server.background.outbox import Outbox
from humanwire.server.background.schedule import Schedule
from humanwire.server.config import ServiceConfig
from humanwire.server.engine.audit_checkpoints import AuditCheckpoints
from humanwire.server.store import Store, open_store
from humanwire.server.store.records import AuditDraft

SIGNING_KEY, PUBLIC_KEY = generate_key_pair()
APPROVER = {"channel": "sms", "to": "+12025550100"}
Entries = list[dict[str, Any]]


def draft(n: int) -> AuditDraft:
    return AuditDraft(
        at=1_764_072_000.0 + n,
        type="approval.decision",
        interaction_id=f"int_{n % 2}",
        actor=APPROVER,
        data={"decision": "approve", "comment": f"ok {n} — é"},
    )


def service_checkpoints(store: Store) -> AuditCheckpoints:
    """The service's checkpoints on ``store``, as an engine with a signing key builds them."""
    schedule = Schedule(store, owner="test", handlers={})
    config = ServiceConfig(audit_signing_key=SIGNING_KEY)
    checkpoints = AuditCheckpoints.configured(config, store, schedule, Outbox(store, config))
    assert checkpoints is not None
    return checkpoints


async def _checkpointed(database: str, rounds: list[int], after: int) -> list[Checkpoint]:
    """``acct_a``'s log appended in ``rounds``, the service's checkpoints taken after each,
    then ``after`` entries more (past the latest checkpoint)."""
    store = open_store(database)
    checkpoints = service_checkpoints(store)
    taken: list[Checkpoint] = []
    written = 0
    try:
        for round_, count in enumerate([*rounds, after]):
            await store.append_audit("acct_a", [draft(written + n) for n in range(1, count + 1)])
            written += count
            if round_ < len(rounds):
                taken += await checkpoints.take()
    finally:
        await store.close()
    return taken


def checkpointed(
    database: str, rounds: tuple[int, ...] = (2, 1, 1), after: int = 2
) -> list[Checkpoint]:
    """Six entries by default, checkpoints at 2, 3 and 4."""
    return asyncio.run(_checkpointed(database, list(rounds), after))


def run_sql(database: str, statements: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
    """Statements run on the database behind the service's back (``?`` placeholders);
    the rows of the last."""
    if database.startswith("postgresql://"):
        with psycopg.connect(database, autocommit=True) as conn:
            found: list[Any] = []
            for statement, params in statements:
                cursor = conn.execute(statement.replace("?", "%s").encode(), params)
                found = cursor.fetchall() if cursor.description else []
            return found
    with sqlite3.connect(database) as db:
        for statement, params in statements:
            found = db.execute(statement, params).fetchall()
        return found


def rewrite(database: str, change: Callable[[Entries], Entries]) -> None:
    """What whoever writes the database can do without the key: change ``acct_a``'s
    entries, number and hash them all again as the service would, move the head."""
    rows = run_sql(database, [("SELECT entry FROM audit WHERE account_id = 'acct_a'", ())])
    entries = sorted((json.loads(row[0]) for row in rows), key=lambda e: e["sequence"])
    statements: list[tuple[str, tuple[Any, ...]]] = [
        ("DELETE FROM audit WHERE account_id = 'acct_a'", ())
    ]
    prev = GENESIS
    for sequence, entry in enumerate(change(entries), start=1):
        entry = {**entry, "sequence": sequence}
        digest = entry_hash(prev, entry)
        statements.append(
            (
                "INSERT INTO audit (account_id, sequence, interaction_id, created_at, entry, "
                "prev, hash) VALUES ('acct_a', ?, ?, 0, ?, ?, ?)",
                (sequence, entry["interactionId"], rfc8785.dumps(entry).decode(), prev, digest),
            )
        )
        prev = digest
    statements.append(
        (
            "UPDATE audit_heads SET sequence = ?, hash = ? WHERE account_id = 'acct_a'",
            (sequence, prev),
        )
    )
    run_sql(database, statements)


def audit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["audit", *args])
    out, err = capsys.readouterr()
    return code, (out + err).splitlines()


def edited(entries: Entries) -> Entries:
    entries[2]["data"]["decision"] = "reject"
    return entries


def reordered(entries: Entries) -> Entries:
    entries[2], entries[3] = entries[3], entries[2]
    return entries


def removed(entries: Entries) -> Entries:
    return entries[:2] + entries[3:]


def inserted(entries: Entries) -> Entries:
    forged = {**entries[2], "data": {"decision": "approve", "comment": "forged"}}
    return [*entries[:2], forged, *entries[2:]]


@pytest.mark.parametrize("change", [edited, reordered, removed, inserted])
def test_a_log_rewritten_and_rehashed_fails_naming_the_entry(
    database: str, capsys: pytest.CaptureFixture[str], change: Callable[[Entries], Entries]
) -> None:
    taken = checkpointed(database)
    assert [c.sequence for c in taken] == [2, 3, 4]
    rewrite(database, change)
    code, lines = audit(capsys, "verify", "--db", database)
    assert code == 0, lines  # the chain and the head alone: the rewrite passes
    code, lines = audit(capsys, "verify", "--db", database, "--public-key", PUBLIC_KEY)
    assert code == 1
    assert lines[0] == (
        f"acct_a: entry 3: it is not the entry the checkpoint of {taken[1].at} had: this "
        "entry was replaced and the chain re-hashed"
    )
    assert lines[1] == (
        f"acct_a:   then entry 4: it is not the entry the checkpoint of {taken[2].at} had: an "
        "entry from 3 to this one was edited, inserted, reordered or removed and the chain "
        "re-hashed"
    )


def test_entries_removed_from_the_end_below_a_checkpoint(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = checkpointed(database)
    rewrite(database, lambda entries: entries[:3])  # the head rewound to 3 with them
    code, lines = audit(capsys, "verify", "--db", database, "--public-key", PUBLIC_KEY)
    assert code == 1
    assert lines == [
        f"acct_a: entry 4: the log ends at entry 3 but the checkpoint of {taken[2].at} had "
        "reached 4 (entries removed from its end?)"
    ]


def test_an_entry_appended_past_the_head_fails_without_any_key(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpointed(database)
    ((entry, last),) = run_sql(database, [("SELECT entry, hash FROM audit WHERE sequence = 6", ())])
    forged = {**json.loads(entry), "sequence": 7}
    insert = (
        "INSERT INTO audit (account_id, sequence, interaction_id, created_at, entry, prev, "
        "hash) VALUES ('acct_a', 7, 'int_1', 0, ?, ?, ?)"
    )
    run_sql(database, [(insert, (rfc8785.dumps(forged).decode(), last, entry_hash(last, forged)))])
    code, lines = audit(capsys, "verify", "--db", database)
    assert code == 1
    assert lines == [
        "acct_a: entry 7: the log goes on past its head, entry 6 (appended behind the "
        "service's back?)"
    ]


def test_a_checkpoint_edited_to_match_a_rewrite_fails_its_signature(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = checkpointed(database)
    rewrite(database, edited)
    hashes = run_sql(database, [("SELECT sequence, hash FROM audit WHERE sequence > 2", ())])
    run_sql(
        database,
        [
            ("UPDATE audit_checkpoints SET hash = ? WHERE sequence = ?", (digest, sequence))
            for sequence, digest in hashes
        ],
    )
    code, lines = audit(capsys, "verify", "--db", database, "--public-key", PUBLIC_KEY)
    assert code == 1
    assert lines == [
        f"acct_a: entry 3: the checkpoint of {taken[1].at} does not match its signature (forged?)",
        f"acct_a:   then entry 4: the checkpoint of {taken[2].at} does not match its signature "
        "(forged?)",
    ]


def test_checkpoints_kept_outside_show_a_rewrite_whose_checkpoints_were_removed(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = checkpointed(database)
    kept = tmp_path / "checkpoints.jsonl"  # what a webhook receiver kept of the events
    events = run_sql(
        database, [("SELECT body FROM events WHERE event_type = 'audit.checkpoint'", ())]
    )
    kept.write_text("".join(f"{row[0]}\n" for row in events), encoding="utf-8")
    rewrite(database, edited)
    run_sql(database, [("DELETE FROM audit_checkpoints", ()), ("DELETE FROM events", ())])
    code, lines = audit(capsys, "verify", "--db", database, "--public-key", PUBLIC_KEY)
    assert (code, lines) == (0, ["acct_a: 6 entries, chain intact, no checkpoint signs it"])
    code, lines = audit(
        capsys, "verify", "--db", database, "--public-key", PUBLIC_KEY, "--checkpoints", str(kept)
    )
    assert code == 1
    assert lines[0].startswith(
        f"acct_a: entry 3: it is not the entry the checkpoint of {taken[1].at} had"
    )
    # The whole log gone from the database, its head too: the copies still name it.
    run_sql(database, [("DELETE FROM audit", ()), ("DELETE FROM audit_heads", ())])
    with_copies = ("--public-key", PUBLIC_KEY, "--checkpoints", str(kept))
    code, lines = audit(capsys, "verify", "--db", database, *with_copies)
    assert code == 1
    assert lines[0] == (
        f"acct_a: entry 1: the log ends at entry 0 but the checkpoint of {taken[0].at} had "
        "reached 2 (entries removed from its end?)"
    )
    code, lines = audit(capsys, "verify", "--db", database, "--checkpoints", str(kept))
    assert code == 2 and "--checkpoints needs --public-key" in lines[0]


def test_an_intact_log_passes_and_says_how_far_it_is_signed(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = checkpointed(database)
    code, lines = audit(capsys, "verify", "--db", database, "--public-key", PUBLIC_KEY)
    signed = f"signed up to entry 4 (the checkpoint of {taken[2].at})"
    assert (code, lines) == (0, [f"acct_a: 6 entries, chain intact, {signed}"])
    _, other = generate_key_pair()
    code, lines = audit(capsys, "verify", "--db", database, "--public-key", other)
    assert code == 1
    assert lines[0] == (
        f"acct_a: entry 2: the checkpoint of {taken[0].at} names a key other than the ones "
        f"given ({PUBLIC_KEY})"
    )
    code, lines = audit(capsys, "verify", "--db", database, "--public-key", "not-a-key")
    assert code == 2 and "--public-key must be an Ed25519 key" in lines[0]


def test_checkpoints_are_published_only_for_heads_that_moved(database: str) -> None:
    taken = checkpointed(database, rounds=(2, 0, 1), after=0)
    assert [c.sequence for c in taken] == [2, 3]  # the head did not move in round two

    async def published() -> tuple[list[dict[str, Any]], list[Checkpoint]]:
        store = open_store(database)
        try:
            events = await store.list_events("acct_a", 10)
            return [e.body for e in reversed(events)], await store.audit_checkpoints("acct_a")
        finally:
            await store.close()

    bodies, stored = asyncio.run(published())
    assert stored == taken
    assert [body["eventType"] for body in bodies] == ["audit.checkpoint"] * 2
    assert [Checkpoint.from_wire(body) for body in bodies] == taken
    marks, breaks = checkpoint_marks(taken, [PUBLIC_KEY])
    assert breaks == [] and [(m.sequence, m.hash) for m in marks] == [
        (c.sequence, c.hash) for c in taken
    ]


def test_the_service_never_signs_a_log_rewritten_since_its_last_checkpoint(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    checkpointed(database)  # checkpoints at 2, 3, 4; the head at 6
    rewrite(database, edited)  # entry 3 on: re-hashed, the head moved to the forgery's

    async def take() -> tuple[list[Checkpoint], list[Checkpoint]]:
        store = open_store(database)
        try:
            taken = await service_checkpoints(store).take()
            return taken, await store.audit_checkpoints("acct_a")
        finally:
            await store.close()

    with caplog.at_level("ERROR", logger="humanwire.audit"):
        taken, stored = asyncio.run(take())
    assert taken == [] and [c.sequence for c in stored] == [2, 3, 4]
    (refused,) = [r for r in caplog.records if "audit.checkpoint_refused" in r.getMessage()]
    assert "acct_a" in refused.getMessage() and "prev is not the hash" in refused.getMessage()


def test_keygen_makes_a_pair_the_service_and_verify_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["audit", "keygen"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [line.split(" = ")[0] for line in lines] == ["signing_key", "public_key"]
    signing_key, public_key = (line.split(" = ")[1].strip('"') for line in lines)
    assert CheckpointSigner(signing_key).public_key == public_key != PUBLIC_KEY
    assert "HUMANWIRE_AUDIT_SIGNING_KEY" in err and signing_key not in err
    assert main(["audit", "keygen"]) == 0
    assert capsys.readouterr().out != out  # a new pair each time


@pytest.mark.parametrize(
    "change",
    [{"sequence": True}, {"sequence": "3"}, {"sequence": 0}, {"hash": None}, {"publicKey": 7}],
)
def test_a_checkpoint_kept_outside_is_read_as_written_or_refused(change: dict[str, Any]) -> None:
    kept = Checkpoint("acc_1", 3, "ab" * 32, "2026-03-01T12:00:00.000Z", "key", "sig")
    event = {"eventType": "audit.checkpoint", "payload": kept.wire()}
    assert Checkpoint.from_wire(event) == Checkpoint.from_wire(kept.wire()) == kept
    with pytest.raises(ValueError, match="checkpoint"):
        Checkpoint.from_wire({**kept.wire(), **change})
