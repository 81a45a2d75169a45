"""Paused runs on disk: :class:`FileRecordStore` keeps them as JSON files, claimed by an
atomic rename, so of two deliveries resuming the same run only one gets it;
:class:`FileRunStore` is the same holding an adapter's own pause type, and
:class:`PendingRecord` one open call of a pause as saved; :func:`resume_once` resumes a
claimed run and gives it back when the resume fails."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

from .keys import SAFE_ID, check_id, store_key
from .ledger import FileApprovalLedger

_Record = TypeVar("_Record")
_Record_co = TypeVar("_Record_co", covariant=True)
_Outcome = TypeVar("_Outcome")


class RecordClaims(Protocol[_Record_co]):
    """A store of paused runs as far as resuming goes: ``claim`` takes one atomically
    (``None`` when someone else has it), ``release`` puts it back, ``finish`` drops it."""

    def claim(self, key: str, /) -> _Record_co | None: ...

    def release(self, key: str, /) -> None: ...

    def finish(self, key: str, /) -> None: ...


class PauseStore(RecordClaims[_Record], Protocol):
    """Where one adapter's pauses wait, by key: ``save`` one, ``load`` it back; ``claim``
    takes one atomically (of two concurrent claims, one gets it) and hides it from
    ``load``; ``release`` puts a claimed pause back; ``finish`` drops a claimed pause whose
    run resumed (a pause saved since under the same key, the run's next, stays)."""

    def save(self, run: _Record, /) -> None: ...

    def load(self, key: str, /) -> _Record | None: ...


async def resume_once(
    store: RecordClaims[_Record],
    key: str,
    resume: Callable[[_Record], Awaitable[_Outcome]],
    *,
    expected: _Record | None = None,
) -> _Outcome | None:
    """Run ``resume`` on the paused run saved under ``key``, once: claimed first, so of two
    deliveries only one resumes it; put back when ``resume`` fails (a retried delivery can
    resume it; the approvals it consumed stay consumed, so their actions do not run
    twice); dropped once it ran (a pause saved meanwhile, the run's next, stays). ``None``
    when someone else has it, or when the saved pause is no longer ``expected`` (the run
    paused again since the answers were read: they are not its answers)."""
    claimed = store.claim(key)
    if claimed is None:
        return None
    if expected is not None and claimed != expected:
        store.release(key)
        return None
    try:
        outcome = await resume(claimed)
    except BaseException:
        store.release(key)
        raise
    store.finish(key)
    return outcome


class FileRecordStore:
    """Paused runs as JSON objects, one file per key in ``directory`` (written atomically;
    claimed by renaming it, which only one process can do), and the consumed approvals
    under ``directory/consumed`` (it is an :class:`ApprovalLedger`).

    ``claim_record`` takes a record and hides it from ``load_record``; ``release`` puts a
    claimed record back; ``finish`` drops a claimed record (a record saved again under the
    same key meanwhile, the run's next pause, stays); ``delete`` drops a key's record,
    claimed or not. Keys come from webhook bodies: one that cannot name a file is refused
    on save and found nowhere.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._ledger: FileApprovalLedger | None = None

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
        if not SAFE_ID.fullmatch(key):
            return None
        return self._read(self._path(key))

    def claim_record(self, key: str) -> dict[str, Any] | None:
        if not SAFE_ID.fullmatch(key):
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

    def delete(self, key: str) -> None:
        self._path(key, ".claimed").unlink(missing_ok=True)
        self._path(key).unlink(missing_ok=True)

    def keys(self) -> list[str]:
        return sorted(path.stem for path in self.directory.glob("*.json"))

    async def consume(self, interaction_id: str) -> bool:
        """Consume an approval: true only the first time, in any process."""
        if self._ledger is None:  # made on first use: a store nothing consumes in has none
            self._ledger = FileApprovalLedger(self.directory / "consumed")
        return await self._ledger.consume(interaction_id)


class FilePlainRecordStore(FileRecordStore):
    """A :class:`FileRecordStore` whose ``save`` and ``load`` take a key and a plain
    record (an adapter that writes its pause's JSON itself: OpenAI Agents, LlamaIndex)."""

    def save(self, key: str, record: Mapping[str, Any]) -> None:
        self.save_record(key, record)

    def load(self, key: str) -> dict[str, Any] | None:
        return self.load_record(key)


@dataclass(frozen=True)
class SavedRecord:
    """A pause an adapter saves as a plain record (the JSON it wrote), with its key."""

    key: str
    record: dict[str, Any]

    @classmethod
    def loader(
        cls, load: Callable[[str], dict[str, Any] | None]
    ) -> Callable[[str], SavedRecord | None]:
        """``load`` (a store's, by key) giving the record with its key."""

        def load_saved(key: str) -> SavedRecord | None:
            record = load(key)
            return cls(key, record) if record is not None else None

        return load_saved


_Pending = TypeVar("_Pending", bound="PendingRecord")


class PendingRecord:
    """A dataclass of string fields, one of them ``kind`` (an approval or a question): a
    paused run's open call as saved, and read back with its kind checked. ``what`` names
    it in the error."""

    what = "call"
    interaction_id: str

    def to_dict(self) -> dict[str, str]:
        return {f.name: getattr(self, f.name) for f in fields(cast(Any, self))}

    @classmethod
    def from_dict(cls: type[_Pending], data: Mapping[str, Any]) -> _Pending:
        kind = data["kind"]
        if kind not in ("approval", "question"):
            raise ValueError(f"unknown pending {cls.what} kind {kind!r}")
        return cls(**{f.name: str(data[f.name]) for f in fields(cast(Any, cls))})


class PendingCalls(Generic[_Pending]):
    """What a paused run's record holds besides its own keys: its open calls (``pending``)
    and the timeout default, saved and read back alike by every adapter (a dataclass
    declares the fields; this gives the lookup and the shared part of its JSON)."""

    pending: tuple[_Pending, ...]
    default_on_timeout: Literal["approve", "reject"]

    def pending_for(self, interaction_id: str) -> _Pending | None:
        """The open call ``interaction_id`` answers, if it is this run's."""
        return next((p for p in self.pending if p.interaction_id == interaction_id), None)

    def record(self, **own: Any) -> dict[str, Any]:
        """The run's JSON: its ``own`` keys, the open calls and the timeout default."""
        return {
            "version": 1,
            **own,
            "default_on_timeout": self.default_on_timeout,
            "pending": [item.to_dict() for item in self.pending],
        }

    @staticmethod
    def timeout_default(data: Mapping[str, Any]) -> Literal["approve", "reject"]:
        """A saved run's timeout default: ``"reject"`` unless it says ``"approve"``."""
        return "approve" if data.get("default_on_timeout") == "approve" else "reject"


class PausedRecord(Protocol):
    """An adapter's paused run as it is saved: plain JSON."""

    def to_dict(self) -> dict[str, Any]: ...


_Paused = TypeVar("_Paused", bound=PausedRecord)


class FileRunStore(FileRecordStore, Generic[_Paused]):
    """A :class:`FileRecordStore` of one adapter's pauses: ``save`` writes a pause under
    its key (``key_of``; a key that cannot name a file is stored under its digest,
    :func:`store_key`), ``load`` and ``claim`` read one back (``read``); ``release`` and
    ``finish`` take the same key."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        read: Callable[[Mapping[str, Any]], _Paused],
        key_of: Callable[[_Paused], str],
    ) -> None:
        super().__init__(directory)
        self._read_pause = read
        self._key_of = key_of

    def save(self, run: _Paused) -> None:
        self.save_record(store_key(self._key_of(run)), run.to_dict())

    def load(self, key: str) -> _Paused | None:
        record = self.load_record(store_key(key))
        return self._read_pause(record) if record is not None else None

    def claim(self, key: str) -> _Paused | None:
        record = self.claim_record(store_key(key))
        return self._read_pause(record) if record is not None else None

    def release(self, key: str) -> None:
        super().release(store_key(key))

    def finish(self, key: str) -> None:
        super().finish(store_key(key))

    def pauses(self) -> list[_Paused]:
        """Every pause waiting (not claimed)."""
        found = (self.load_record(key) for key in self.keys())
        return [self._read_pause(record) for record in found if record is not None]
