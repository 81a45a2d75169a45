"""Where ``serve`` and the embedded mode record an account's key beside a database, and how
``accounts rotate-key`` and ``delete`` keep those records true."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .databases import is_database_url

__all__ = [
    "forget_recorded_key",
    "key_file_of",
    "key_matches",
    "read_json",
    "read_key",
    "recorded_key_files",
    "replace_recorded_key",
    "write_json",
    "write_key",
]


def key_file_of(db_path: str) -> Path | None:
    """Where ``serve`` keeps the key it created for a database (only a hash is in it)."""
    if is_database_url(db_path):
        # One key file per database URL, beside the embedded service's files (the URL
        # itself may hold a password: only its hash names the file).
        from humanwire.server.runtime.embedded import embedded_home

        digest = hashlib.sha256(db_path.encode()).hexdigest()[:16]
        return embedded_home() / f"db-{digest}.key"
    if db_path == ":memory:":
        return None
    return Path(db_path).with_suffix(".key")


def read_key(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        key = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return key or None


def write_key(path: Path | None, key: str) -> None:
    if path is None:
        return
    # A database URL's key file is under ~/.humanwire, which a fresh machine lacks.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")


def recorded_key_files(db_path: str) -> tuple[Path | None, Path | None]:
    """Where keys of ``db_path`` may be recorded: ``serve``'s key file, and the embedded
    mode's ``embedded.json`` when the database is the one it uses."""
    from humanwire.server.runtime.embedded import embedded_home

    embedded = None
    if not is_database_url(db_path) and Path(db_path).resolve().parent == embedded_home().resolve():
        embedded = embedded_home() / "embedded.json"
    return key_file_of(db_path), embedded


def key_matches(key: object, key_hash: str) -> bool:
    return isinstance(key, str) and hashlib.sha256(key.encode()).hexdigest() == key_hash


def replace_recorded_key(db_path: str, old_hash: str, key: str) -> list[Path]:
    """A recorded copy of the rotated key is replaced by the new one: ``serve`` would
    otherwise create a new account at its next start (its recorded key opens none)."""
    from humanwire.server.runtime.embedded import record_embedded_service

    key_file, embedded = recorded_key_files(db_path)
    replaced = []
    if key_file is not None and key_matches(read_key(key_file), old_hash):
        write_key(key_file, key)
        replaced.append(key_file)
    state = read_json(embedded)
    if embedded is not None and key_matches(state.get("api_key"), old_hash):
        record_embedded_service(str(state.get("base_url") or ""), key)
        replaced.append(embedded)
    return replaced


def forget_recorded_key(db_path: str, key_hash: str) -> list[Path]:
    """A recorded key of the deleted account is forgotten: ``serve`` and embedded mode
    would otherwise create an account with it again (a fresh account gets a fresh key)."""
    key_file, embedded = recorded_key_files(db_path)
    forgotten = []
    if key_file is not None and key_matches(read_key(key_file), key_hash):
        with contextlib.suppress(OSError):
            key_file.unlink()
        forgotten.append(key_file)
    state = read_json(embedded)
    if embedded is not None and key_matches(state.get("api_key"), key_hash):
        state.pop("api_key")
        write_json(embedded, state)
        forgotten.append(embedded)
    return forgotten


def read_json(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
