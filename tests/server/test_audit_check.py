"""``approvals.audit_check``, the one check of a log (``humanwire audit verify`` and the
console's audit page): a consistent log passes and says how far it is signed; with
``others_unchecked`` (the service checking with its own key alone) a checkpoint of
another key is left aside, where the command line given that key alone names it."""

from __future__ import annotations

from typing import Any

from humanwire.server.approvals.audit import GENESIS, entry_hash
from humanwire.server.approvals.audit_check import check_log
from humanwire.server.approvals.checkpoints import (
    Checkpoint,
    CheckpointSigner,
    generate_key_pair,
)
from humanwire.server.store.records import AuditRecord

OURS, OURS_PUBLIC = generate_key_pair()
THEIRS, _THEIRS_PUBLIC = generate_key_pair()


class Log:
    """What the check reads of a store: three entries of ``acct_a`` and checkpoints."""

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []
        prev = GENESIS
        for sequence in (1, 2, 3):
            entry: dict[str, Any] = {
                "sequence": sequence,
                "at": "2026-12-04T19:00:00.000Z",
                "type": "approval.decision",
                "interactionId": "int_1",
                "actor": None,
                "data": {},
            }
            digest = entry_hash(prev, entry)
            self.records.append(AuditRecord("acct_a", sequence, "int_1", 0.0, entry, prev, digest))
            prev = digest
        self.checkpoints: list[Checkpoint] = []

    @property
    def head(self) -> tuple[int, str]:
        return self.records[-1].sequence, self.records[-1].hash

    def sign(self, key: str, sequence: int) -> None:
        record = self.records[sequence - 1]
        signed = CheckpointSigner(key).sign("acct_a", sequence, record.hash, "2026-12-04T19:01Z")
        self.checkpoints.append(signed)

    async def audit_after(self, account_id: str, after: int, limit: int) -> list[AuditRecord]:
        return [r for r in self.records if r.sequence > after][:limit]

    async def audit_checkpoints(self, account_id: str) -> list[Checkpoint]:
        return list(self.checkpoints)


async def test_a_log_signed_by_our_key_passes_and_says_how_far() -> None:
    log = Log()
    log.sign(OURS, 2)
    checked = await check_log(log, "acct_a", log.head, public_keys=[OURS_PUBLIC])
    assert checked.intact and checked.entries == 3 and checked.last == 3
    assert checked.signed.startswith(", signed up to entry 2 (the checkpoint of ")


async def test_a_checkpoint_of_another_key_is_left_aside_only_when_asked() -> None:
    log = Log()
    log.sign(THEIRS, 2)
    named = await check_log(log, "acct_a", log.head, public_keys=[OURS_PUBLIC])
    assert [b.sequence for b in named.breaks] == [2]
    assert "names a key other than the ones given" in named.breaks[0].problem
    aside = await check_log(
        log, "acct_a", log.head, public_keys=[OURS_PUBLIC], others_unchecked=True
    )
    assert aside.intact and aside.signed == ", no checkpoint signs it"


async def test_a_missing_head_and_an_edit_are_breaks() -> None:
    log = Log()
    assert not (await check_log(log, "acct_a", None)).intact
    record = log.records[1]
    log.records[1] = AuditRecord(
        "acct_a", 2, "int_1", 0.0, {**record.entry, "data": {"x": 1}}, record.prev, record.hash
    )
    checked = await check_log(log, "acct_a", log.head)
    assert [b.sequence for b in checked.breaks] == [2]
    assert "does not match its hash" in checked.breaks[0].problem
