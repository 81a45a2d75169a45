"""The framework-neutral pieces of paused calls every adapter uses (``humanwire._pauses``):
decisions as JSON and back (failing closed), Idempotency-Keys, which deliveries are an
adapter's, the file store's claim, and the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from humanwire._pauses import (
    BlockingApprovalLedger,
    BlockingLedger,
    FileApprovalLedger,
    FileRecordStore,
    MemoryApprovalLedger,
    action_key,
    approver_source,
    decision_from_value,
    decision_to_dict,
    delivery_for,
    idempotency_key,
    resume_once,
    settle_approval,
    store_key,
)
from humanwire.approval import (
    ApprovalRequest,
    Approver,
    action_digest_of,
    decision_from_values,
    timeout_decision,
)
from humanwire.errors import HumanWireError


def test_a_decision_survives_json() -> None:
    for decision in (
        decision_from_values({"decision": "approve", "comment": "ok"}, interaction_id="i-1"),
        decision_from_values({"decision": "edit", "arguments": '{"a": 1}'}, interaction_id="i-2"),
        decision_from_values({"decision": "reject", "comment": "no"}, interaction_id="i-3"),
        timeout_decision("approve", interaction_id="i-4"),
    ):
        assert decision_from_value(decision_to_dict(decision)) == decision


def test_answers_given_by_hand() -> None:
    assert decision_from_value(True).approved
    assert not decision_from_value(False).approved
    assert decision_from_value("approve").approved
    assert not decision_from_value("reject").approved
    rejected = decision_from_value({"decision": "reject", "comment": "too much"})
    assert (rejected.approved, rejected.comment) == (False, "too much")


def test_anything_unclear_is_a_rejection() -> None:
    for value in (None, 1, "yes please", {"decision": "maybe"}, ["approve"]):
        assert not decision_from_value(value).approved, value
    # A saved decision whose kind contradicts its flag is not trusted to approve.
    assert not decision_from_value({"approved": True, "decision": "reject"}).approved


def test_idempotency_keys_stay_within_the_services_limit() -> None:
    assert idempotency_key("approval", "strands", "s-1", 4, "v1:x") == (
        "humanwire-approval:strands:s-1:4:v1:x"
    )
    long = idempotency_key("approval", "strands", "s" * 300, 1)
    assert len(long) <= 255 and long.startswith("humanwire-approval:strands:")
    assert idempotency_key("question", "strands", "é", 1) != idempotency_key(
        "question", "strands", "e", 1
    )
    # Ids are the application's own: a ":" inside one must not make two calls one key.
    split_one = idempotency_key("approval", "google-adk", "app:u1", "s1")
    split_two = idempotency_key("approval", "google-adk", "app", "u1:s1")
    assert split_one != split_two and ":app" not in split_one
    assert store_key("order-1042") == "order-1042"
    assert store_key("a/b").startswith("run-")


def test_an_action_key_is_bound_to_the_run_the_call_and_the_action() -> None:
    pay = ApprovalRequest("pay", {"amount": 5})
    key = action_key("approval", "agno", "run-1", "call_1", request=pay)
    assert key == f"humanwire-approval:agno:run-1:call_1:{action_digest_of(pay)}"
    # A resume sending the same request again gets the same key (the same interaction).
    assert action_key("approval", "agno", "run-1", "call_1", request=pay) == key
    others = {
        action_key("approval", "agno", "run-2", "call_1", request=pay),  # another run
        action_key(
            "approval", "agno", "run-1", "call_1", request=ApprovalRequest("pay", {"amount": 6})
        ),
        action_key("approval", "agno", "run-1", "call_1", "name", request=pay),  # another field
        action_key("question", "agno", "run-1", "call_1", request=pay),
    }
    assert key not in others and len(others) == 4


async def test_settling_what_a_gate_holds_fails_closed() -> None:
    pay = ApprovalRequest("pay", {"amount": 5})
    used, refusal = await settle_approval(None, HumanWireError("the service stopped"), pay)
    assert used is None
    assert refusal == (
        "pay was not run: its approval could not be requested (humanwire: the service stopped)."
    )
    used, refusal = await settle_approval(None, None, pay)
    assert (used, refusal) == (None, "pay was not run: it has no decision.")
    rejected = decision_from_values({"decision": "reject", "comment": "too much"})
    used, refusal = await settle_approval(None, rejected, pay)
    assert used == rejected and refusal == "pay was not run: a human rejected it. Reason: too much"
    approved = decision_from_values({"decision": "approve"})
    assert await settle_approval(None, approved, pay) == (approved, "")


def test_a_record_is_claimed_once_and_a_newer_one_survives(tmp_path: Path) -> None:
    store = FileRecordStore(tmp_path)
    store.save_record("s1", {"n": 1})
    assert store.claim_record("s1") == {"n": 1}
    assert store.claim_record("s1") is None  # claimed already
    assert store.load_record("s1") is None
    store.release("s1")
    assert store.load_record("s1") == {"n": 1}

    assert store.claim_record("s1") == {"n": 1}
    store.save_record("s1", {"n": 2})  # the resumed run paused again
    store.release("s1")  # a failure after that must not bring the old pause back
    assert store.load_record("s1") == {"n": 2}
    store.finish("s1")
    assert store.keys() == ["s1"] and store.load_record("s1") == {"n": 2}
    with pytest.raises(ValueError):
        store.save_record("../x", {})
    assert store.load_record("../x") is None


def test_a_delivery_is_an_adapters_only_when_its_send_says_so() -> None:
    def event(event_type: str, payload: dict[str, object]) -> dict[str, object]:
        return {"eventType": event_type, "payload": {"interactionId": "i-1", **payload}}

    ours = {"humanwire_resume": "strands", "strands_session_id": "s1"}
    form = event("form.received", {"values": {"decision": "approve"}, "metadata": ours})
    sms = {"medium": "sms", "from": "+12025550100", "to": "+14155550123"}
    reply = event("message.received", {**sms, "body": "Porto", "metadata": ours})
    delivery = delivery_for("strands", form)
    assert delivery is not None and delivery.metadata == ours
    assert delivery.interaction_id == "i-1"
    assert delivery_for("pydantic_ai", form) is None  # another adapter's pause
    assert delivery_for("strands", reply) is None  # a question's answer, not asked for
    assert delivery_for("strands", reply, questions=True) is not None
    with pytest.raises(TypeError):  # a signature is checked against the raw body only
        delivery_for("strands", form, secret="whsec_test")


class Runs(FileRecordStore):
    """Paused runs as an adapter's store hands them to ``resume_once``."""

    def claim(self, key: str) -> dict[str, object] | None:
        return self.claim_record(key)


async def test_a_paused_run_resumes_once_and_comes_back_after_a_failure(tmp_path: Path) -> None:
    store, seen = Runs(tmp_path), []
    store.save_record("r1", {"n": 1})

    async def fail(record: dict[str, object]) -> str:
        raise RuntimeError("model provider down")

    async def resume(record: dict[str, object]) -> str:
        seen.append(record)
        return "done"

    with pytest.raises(RuntimeError):
        await resume_once(store, "r1", fail)
    assert store.load_record("r1") == {"n": 1}  # given back for a retried delivery
    # Answers read for another pause of the run are not its answers.
    assert await resume_once(store, "r1", resume, expected={"n": 0}) is None
    assert store.load_record("r1") == {"n": 1}
    assert await resume_once(store, "r1", resume, expected={"n": 1}) == "done"
    assert await resume_once(store, "r1", resume) is None  # resumed already
    assert seen == [{"n": 1}] and store.keys() == []


def test_an_approver_or_its_options_not_both() -> None:
    with pytest.raises(TypeError, match="not both"):
        approver_source(Approver(to="+14155550123"), to="+14155550199")
    source = approver_source(to="+14155550123")  # built on first use, then kept
    assert source() is source() and source().to == "+14155550123"


async def test_an_approval_is_consumed_once_across_ledgers(tmp_path: Path) -> None:
    one, other = FileApprovalLedger(tmp_path / "used"), FileApprovalLedger(tmp_path / "used")
    assert await one.consume("i-1")
    assert not await other.consume("i-1")
    # Any id is a key: one that looks like a path names no other file.
    assert await one.consume("../i") and not await other.consume("../i")
    assert [path.parent for path in tmp_path.rglob("*.consumed")] == [tmp_path / "used"] * 2


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_the_blocking_face_consumes_in_the_same_ledger(kind: str, tmp_path: Path) -> None:
    ledger = MemoryApprovalLedger() if kind == "memory" else FileApprovalLedger(tmp_path)
    blocking = BlockingLedger(ledger)
    assert isinstance(blocking, BlockingApprovalLedger)
    assert blocking.consume("i-1")
    assert not await ledger.consume("i-1")  # consumed once, whichever face asks
    assert await ledger.consume("i-2")
    assert not blocking.consume("i-2")
