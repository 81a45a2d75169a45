"""Framework-neutral pieces of paused runs and approvals that run once, for the agent
framework adapters (written for ``humanwire.strands``; nothing here imports a framework).

- Keys: :func:`store_key` turns a run's id into a file-safe key, :func:`idempotency_key`
  makes a send's Idempotency-Key from the run's parts (a digest when they are too long).
- Decisions as plain JSON (:func:`decision_to_dict`, :func:`decision_from_value`), for a
  framework that stores the human's answer in its own state; :func:`denial_text` is what a
  model reads when the action was not approved.
- Answers from the service: :func:`decision_from_status` (an approval form),
  :func:`reply_from_status` (a question), and :func:`parse_delivery` (a webhook).
- Used once: an :class:`ApprovalLedger` consumes an approval's interaction id exactly once
  (:class:`MemoryApprovalLedger` in one process, :class:`FileApprovalLedger` across
  processes sharing a directory).
- :class:`FileRecordStore`: paused runs as JSON files, claimed by an atomic rename, so of
  two deliveries resuming the same run only one gets it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from .approval import ApprovalDecision, decision_from_values, timeout_decision
from .types import (
    DEFAULT_NO_RESPONSE_TEMPLATE,
    Event,
    FormReceivedEvent,
    InteractionStatus,
    MessageReceivedEvent,
    event_adapter,
)
from .webhooks import SIGNATURE_HEADER, parse_event

__all__ = [
    "RESUME_KEY",
    "ApprovalLedger",
    "FileApprovalLedger",
    "FileRecordStore",
    "MemoryApprovalLedger",
    "check_id",
    "decision_from_status",
    "decision_from_value",
    "decision_to_dict",
    "denial_text",
    "idempotency_key",
    "parse_delivery",
    "reply_from_status",
    "reply_text",
    "store_key",
]

RESUME_KEY = "humanwire_resume"
"""A paused run's send carries ``metadata[humanwire_resume]`` = the framework: each
receiver resumes its own runs and leaves the others' deliveries alone."""

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MAX_IDEMPOTENCY_KEY = 255


# --- keys -------------------------------------------------------------------------------


def check_id(value: str, what: str) -> str:
    """``value`` when it can name a file; ``ValueError`` otherwise (ids come from webhook
    bodies and saved state: never let one name another file)."""
    if not _SAFE_ID.fullmatch(value):
        raise ValueError(f"not {what}: {value!r}")
    return value


def store_key(run_id: str) -> str:
    """A paused run's file-safe key: the id itself when it can name a file, else a digest."""
    if _SAFE_ID.fullmatch(run_id):
        return run_id
    return "run-" + hashlib.sha256(run_id.encode()).hexdigest()[:40]


def idempotency_key(kind: str, framework: str, *parts: str | int) -> str:
    """``humanwire-<kind>:<framework>:<part>:…``, or a digest of the parts when that is too
    long or not printable ASCII: one send per run and call, however often a step repeats
    (the service answers a repeated key and body with the first response)."""
    key = f"humanwire-{kind}:{framework}:" + ":".join(str(part) for part in parts)
    if len(key) <= _MAX_IDEMPOTENCY_KEY and key.isascii() and key.isprintable():
        return key
    digest = hashlib.sha256("\0".join(str(part) for part in parts).encode()).hexdigest()
    return f"humanwire-{kind}:{framework}:{digest}"


# --- decisions as JSON ----------------------------------------------------------------------


def decision_to_dict(decision: ApprovalDecision) -> dict[str, Any]:
    """The decision as plain JSON, for a framework's own saved state."""
    return {
        "approved": decision.approved,
        "decision": decision.decision,
        "comment": decision.comment,
        "timed_out": decision.timed_out,
        "arguments": decision.arguments,
        "interaction_id": decision.interaction_id,
    }


_KINDS = ("approve", "reject", "edit", "respond", "timeout")


def decision_from_value(value: Any) -> ApprovalDecision:
    """A decision back from :func:`decision_to_dict`, or from what a host answered by hand:
    ``True`` / ``False``, ``"approve"`` / ``"reject"`` (read as a form's ``decision``), or
    ``{"decision": ..., "comment": ...}``. Anything else is a rejection that says so:
    approval fails closed."""
    if value is True or value is False:
        return ApprovalDecision(value, "approve" if value else "reject")
    if isinstance(value, str):
        return decision_from_values({"decision": value})
    if isinstance(value, Mapping):
        kind = value.get("decision")
        arguments = value.get("arguments")
        interaction_id = str(value.get("interaction_id") or "")
        comment = value.get("comment")
        comment = str(comment) if comment else None
        if "approved" in value and kind in _KINDS:
            # Approved only when the kind agrees: a "reject" marked approved is a rejection.
            agrees = kind in ("approve", "edit", "timeout")
            return ApprovalDecision(
                approved=value["approved"] is True and agrees,
                decision=kind,
                comment=comment,
                timed_out=value.get("timed_out") is True,
                arguments=dict(arguments) if isinstance(arguments, Mapping) else None,
                interaction_id=interaction_id,
            )
        values = {key: str(item) for key, item in value.items() if isinstance(item, str)}
        if isinstance(arguments, Mapping):
            values["arguments"] = json.dumps(dict(arguments))
        return decision_from_values(values, interaction_id=interaction_id)
    note = f"Unreadable decision {value!r}; treated as a rejection."
    return ApprovalDecision(False, "reject", note)


def denial_text(action: str, decision: ApprovalDecision) -> str:
    """What the model reads when the action was not approved (the other adapters say the
    same): why, with the human's comment."""
    if decision.timed_out:
        return (
            f"{action} was not run: no approval decision arrived in time "
            "(timeout; rejected by default)."
        )
    if decision.decision == "respond":
        return f"{action} was not run. The human answered instead: {decision.comment or ''}".strip()
    reason = f" Reason: {decision.comment}" if decision.comment else ""
    return f"{action} was not run: a human rejected it.{reason}"


# --- answers from the service -------------------------------------------------------------


def reply_text(body: str) -> str:
    """A question's answer as the model reads it (the message tools say the same)."""
    return f"Human response: {body}"


def decision_from_status(
    status: InteractionStatus,
    default_on_timeout: Literal["approve", "reject"],
) -> ApprovalDecision | None:
    """The decision an approval form's status holds; the timeout default once it ended
    unanswered; ``None`` while it is open."""
    result = status.result
    if isinstance(result, FormReceivedEvent):
        return decision_from_values(result.payload.values, interaction_id=status.interaction_id)
    if status.ended:
        return timeout_decision(default_on_timeout, interaction_id=status.interaction_id)
    return None


def reply_from_status(status: InteractionStatus) -> str | None:
    """A question's reply (as the model reads it); the no-response text once it ended
    unanswered; ``None`` while it is open."""
    result = status.result
    if isinstance(result, MessageReceivedEvent):
        return reply_text(result.payload.body)
    if status.ended:
        return DEFAULT_NO_RESPONSE_TEMPLATE
    return None


def parse_delivery(
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
) -> Event:
    """The event a webhook delivery carries. With ``secret`` the ``Humanwire-Signature``
    header is verified against the raw body first, and a delivery that cannot be trusted
    raises ``WebhookVerificationError``."""
    if not isinstance(body, (bytes, str)):
        if secret is not None:
            raise TypeError("verifying a signature needs the raw body (bytes or str)")
        if isinstance(body, Mapping):
            return event_adapter.validate_python(dict(body))
        return body
    signature = None
    if secret is not None:
        lowered = {key.lower(): value for key, value in (headers or {}).items()}
        signature = lowered.get(SIGNATURE_HEADER.lower(), "")
    return parse_event(body, signature=signature, secret=secret)


# --- used once ------------------------------------------------------------------------------


@runtime_checkable
class ApprovalLedger(Protocol):
    """Where approvals are consumed: ``consume`` is true the first time for an
    interaction id and false after that, across every process sharing the ledger."""

    async def consume(self, interaction_id: str) -> bool: ...


class MemoryApprovalLedger:
    """Consumed approvals of this process."""

    def __init__(self) -> None:
        self._consumed: set[str] = set()
        self._lock = threading.Lock()

    async def consume(self, interaction_id: str) -> bool:
        with self._lock:
            if interaction_id in self._consumed:
                return False
            self._consumed.add(interaction_id)
            return True


class FileApprovalLedger:
    """Consumed approvals as files in ``directory``, one per interaction, created with
    ``O_CREAT | O_EXCL``: of two processes consuming at once, exactly one succeeds."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    async def consume(self, interaction_id: str) -> bool:
        path = self.directory / f"{check_id(interaction_id, 'an interaction id')}.consumed"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        os.close(fd)
        return True


# --- paused runs on disk ----------------------------------------------------------------------


class FileRecordStore:
    """Paused runs as JSON objects, one file per key in ``directory`` (written atomically;
    claimed by renaming it, which only one process can do), and the consumed approvals
    under ``directory/consumed`` (it is an :class:`ApprovalLedger`).

    ``claim`` takes a record and hides it from ``load``; ``release`` puts a claimed record
    back; ``finish`` drops a claimed record (a record saved again under the same key
    meanwhile, the run's next pause, stays).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._ledger = FileApprovalLedger(self.directory / "consumed")

    def _path(self, key: str, suffix: str = ".json") -> Path:
        return self.directory / f"{check_id(key, 'a paused run key')}{suffix}"

    def save_record(self, key: str, record: Mapping[str, Any]) -> None:
        path = self._path(key)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".paused-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(dict(record), file)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if not isinstance(data, dict):
            raise ValueError(f"{path} does not hold a paused run")
        return data

    def load_record(self, key: str) -> dict[str, Any] | None:
        if not _SAFE_ID.fullmatch(key):
            return None
        return self._read(self._path(key))

    def claim_record(self, key: str) -> dict[str, Any] | None:
        if not _SAFE_ID.fullmatch(key):
            return None
        claimed = self._path(key, ".claimed")
        try:
            os.rename(self._path(key), claimed)
        except FileNotFoundError:
            return None  # resumed, or being resumed, by someone else
        return self._read(claimed)

    def release(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            # Not over a record saved since (the run paused again): that one is newer.
            if not self._path(key).exists():
                os.rename(self._path(key, ".claimed"), self._path(key))

    def finish(self, key: str) -> None:
        self._path(key, ".claimed").unlink(missing_ok=True)

    def keys(self) -> list[str]:
        return sorted(path.stem for path in self.directory.glob("*.json"))

    async def consume(self, interaction_id: str) -> bool:
        """Consume an approval: true only the first time, in any process."""
        return await self._ledger.consume(interaction_id)
