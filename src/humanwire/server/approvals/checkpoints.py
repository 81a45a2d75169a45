"""Signed checkpoints of the accounts' audit heads: what anchors a chain that has no key.

The service signs each account's head (``sequence``, ``hash``, the time) with an Ed25519
key the database does not hold (``[audit] signing_key``), stores the checkpoint and
publishes it as an ``audit.checkpoint`` event, so copies live outside the database too.
Whoever can write the database can re-hash a chain after an edit and move its head, but
cannot sign: an entry at or before a checkpoint's position that no longer hashes as the
checkpoint says shows, however consistently the rest was re-hashed (``audit.verify`` with
the checkpoints as marks).

The signed message is ``humanwire.audit.checkpoint`` and a newline, then the canonical JSON
(RFC 8785) of ``{"accountId", "sequence", "hash", "at"}``: anyone holding an event and the
public key can check it. Keys are base64 (standard alphabet, padded) of their 32 raw
bytes: the private key's seed for signing, the public key for ``humanwire audit verify
--public-key``; ``humanwire audit keygen`` makes a pair. ``cryptography`` (the ``audit``
extra) signs and checks; it is imported only here, only when used.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic

from humanwire.types.events import AuditCheckpoint

from .audit import Break, Mark

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "AUDIT_EXTRA",
    "CHECKPOINT_EVENT",
    "Checkpoint",
    "CheckpointSigner",
    "checkpoint_marks",
    "generate_key_pair",
    "key_problem",
    "parse_key",
]

CHECKPOINT_EVENT = "audit.checkpoint"
AUDIT_EXTRA = 'pip install "humanwire[audit]"'
_CONTEXT = b"humanwire.audit.checkpoint\n"
"""Signed before the checkpoint's JSON: a signature of this key over anything else (a
future message of another kind) is never a checkpoint's."""


def parse_key(text: str) -> bytes:
    """The 32 raw bytes of a base64 Ed25519 key (``ValueError`` for anything else)."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ValueError("must be an Ed25519 key: base64 of its 32 bytes (humanwire audit keygen)")
    return raw


def key_problem() -> str | None:
    """Why checkpoints cannot be signed or checked here (None: they can)."""
    if importlib.util.find_spec("cryptography") is None:
        return f"signing audit checkpoints needs the cryptography package: {AUDIT_EXTRA}"
    return None


def _private_key(seed: bytes) -> Ed25519PrivateKey:
    problem = key_problem()
    if problem is not None:
        raise RuntimeError(problem)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(seed)


def _public_text(key: Ed25519PrivateKey) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def generate_key_pair() -> tuple[str, str]:
    """A new ``(signing_key, public_key)``, both base64."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    key = Ed25519PrivateKey.generate()
    seed = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return base64.b64encode(seed).decode("ascii"), _public_text(key)


@dataclass(frozen=True)
class Checkpoint:
    """One account's head as the service signed it."""

    account_id: str
    sequence: int
    hash: str
    at: str
    """When it was signed, as signed: UTC to the millisecond (``…T12:00:00.000Z``)."""
    public_key: str
    """The key that signed it (base64): which of several given keys to check it with."""
    signature: str
    """Base64 of the Ed25519 signature of ``message()``."""

    def message(self) -> bytes:
        import rfc8785

        signed: dict[str, str | int] = {
            "accountId": self.account_id,
            "sequence": self.sequence,
            "hash": self.hash,
            "at": self.at,
        }
        return _CONTEXT + rfc8785.dumps(signed)

    def wire(self) -> dict[str, Any]:
        """The ``audit.checkpoint`` event's payload."""
        return self._model().to_wire()

    def _model(self) -> AuditCheckpoint:
        return AuditCheckpoint(
            account_id=self.account_id,
            sequence=self.sequence,
            hash=self.hash,
            at=self.at,
            public_key=self.public_key,
            signature=self.signature,
        )

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Checkpoint:
        """A payload (or a whole ``audit.checkpoint`` event) kept outside the database;
        ``ValueError`` for anything else."""
        if data.get("eventType") == CHECKPOINT_EVENT and isinstance(data.get("payload"), dict):
            data = data["payload"]
        try:
            # Strict: a copy kept outside is checked as written, "5" is not a sequence.
            model = AuditCheckpoint.model_validate(data, strict=True)
        except pydantic.ValidationError as invalid:
            first = invalid.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"not a checkpoint: {where}: {first['msg']}") from None
        if model.sequence < 1:
            raise ValueError("a checkpoint's sequence is a number from 1")
        return cls(
            account_id=model.account_id,
            sequence=model.sequence,
            hash=model.hash,
            at=model.at,
            public_key=model.public_key,
            signature=model.signature,
        )


class CheckpointSigner:
    """Signs checkpoints with the service's key (``[audit] signing_key``: base64 of the
    Ed25519 private key's 32-byte seed). ``RuntimeError`` without ``cryptography``."""

    def __init__(self, signing_key: str) -> None:
        self._key = _private_key(parse_key(signing_key))
        self.public_key = _public_text(self._key)

    def sign(self, account_id: str, sequence: int, hash_: str, at: str) -> Checkpoint:
        unsigned = Checkpoint(account_id, sequence, hash_, at, self.public_key, "")
        signature = self._key.sign(unsigned.message())
        return Checkpoint(
            account_id,
            sequence,
            hash_,
            at,
            self.public_key,
            base64.b64encode(signature).decode("ascii"),
        )


def checkpoint_marks(
    checkpoints: Iterable[Checkpoint], public_keys: Sequence[str]
) -> tuple[list[Mark], list[Break]]:
    """The checkpoints signed by one of ``public_keys`` as marks for ``audit.verify``, and
    a break for each one that is not."""
    problem = key_problem()
    if problem is not None:
        raise RuntimeError(problem)
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    keys = {base64.b64encode(parse_key(key)).decode("ascii") for key in public_keys}
    marks: list[Mark] = []
    breaks: list[Break] = []
    for checkpoint in checkpoints:
        by = f"the checkpoint of {checkpoint.at}"
        if checkpoint.public_key not in keys:
            breaks.append(
                Break(
                    checkpoint.sequence,
                    f"{by} names a key other than the ones given ({checkpoint.public_key})",
                )
            )
            continue
        try:
            signature = base64.b64decode(checkpoint.signature, validate=True)
            public = Ed25519PublicKey.from_public_bytes(parse_key(checkpoint.public_key))
            public.verify(signature, checkpoint.message())
        except (InvalidSignature, binascii.Error, ValueError):
            breaks.append(
                Break(checkpoint.sequence, f"{by} does not match its signature (forged?)")
            )
            continue
        marks.append(Mark(checkpoint.sequence, checkpoint.hash, by))
    return marks, breaks
