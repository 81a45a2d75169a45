"""The keys of a paused call: which adapter's pause a send belongs to (:data:`RESUME_KEY`),
one send per run and call (:func:`idempotency_key`, :func:`reuse_parts`; bound to the
action too: :func:`action_key`), the metadata a resume needs (:func:`metadata_value`) or
that only informs (:func:`optional_metadata`), and ids that may name files
(:func:`check_id`, :func:`store_key`)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping

from humanwire.approval import ApprovalRequest, action_digest_of
from humanwire.types import METADATA_MAX_VALUE_LENGTH

RESUME_KEY = "humanwire_resume"
"""A paused call's send carries ``metadata[humanwire_resume]`` = the adapter
(``langgraph``, ``openai_agents``, ``pydantic_ai``, ``google_adk``, ``strands``...): each
webhook receiver resumes its own pauses and leaves the others' deliveries alone."""

DEFAULT_PAUSE_WINDOW = 3600.0
"""Seconds a paused call's form or question stays open when the approver sets no
``follow_up_time``: a paused run can wait longer than a held request."""

SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""An id that may name a file."""
_MAX_IDEMPOTENCY_KEY = 255


def check_id(value: str, what: str) -> str:
    """``value`` when it can name a file; ``ValueError`` otherwise (ids come from webhook
    bodies and saved state: never let one name another file)."""
    if not SAFE_ID.fullmatch(value):
        raise ValueError(f"not {what}: {value!r}")
    return value


def store_key(run_id: str) -> str:
    """A paused run's file-safe key: the id itself when it can name a file, else a digest."""
    if SAFE_ID.fullmatch(run_id):
        return run_id
    return "run-" + hashlib.sha256(run_id.encode()).hexdigest()[:40]


def idempotency_key(kind: str, framework: str, *parts: str | int) -> str:
    """``humanwire-<kind>:<framework>:<part>:…``: one send per run and call, however often
    a step repeats (the service answers a repeated key and body with the first response).
    A digest of the parts instead when that is too long or not printable ASCII, or when a
    part before the last holds a ``:`` (two calls must never read as one)."""
    texts = [str(part) for part in parts]
    key = f"humanwire-{kind}:{framework}:" + ":".join(texts)
    readable = not any(":" in text for text in texts[:-1])
    if readable and len(key) <= _MAX_IDEMPOTENCY_KEY and key.isascii() and key.isprintable():
        return key
    digest = hashlib.sha256(json.dumps(texts).encode()).hexdigest()
    return f"humanwire-{kind}:{framework}:{digest}"


def action_key(kind: str, framework: str, *parts: str | int, request: ApprovalRequest) -> str:
    """:func:`idempotency_key` bound to the action too: ``parts`` (the run or session, the
    call id, ...) then the digest of ``request``. Unique per run and per action, so a model
    reusing a call id (``call_1``) for another action, or in another run, is asked afresh,
    while a resume sending the same request again gets the same interaction back."""
    return idempotency_key(kind, framework, *parts, action_digest_of(request))


def reuse_parts(call_ids: Iterable[str], call_id: str) -> tuple[str, ...]:
    """The key parts that tell apart the calls of a conversation that share ``call_id``
    (models and fakes reuse ids like ``call_1`` from turn to turn): none for its first
    call, so a repeated or resumed step gets the first key again, and ``use-<n>`` for the
    n-th, so a later call under a reused id is asked afresh (not answered "ran before").
    ``call_ids``: every call id of the conversation so far, this call's included."""
    uses = sum(1 for seen in call_ids if seen == call_id)
    return () if uses <= 1 else (f"use-{uses}",)


def metadata_value(what: str, value: str) -> str:
    """``value`` when it can travel as a metadata value, else a ``ValueError`` naming
    ``what`` (a run id, a session id...): a key a resume needs must not be left out."""
    if not value or len(value) > METADATA_MAX_VALUE_LENGTH:
        raise ValueError(
            f"the {what} must be 1 to {METADATA_MAX_VALUE_LENGTH} characters to travel "
            f"in a send's metadata, got {len(value)}"
        )
    return value


def optional_metadata(keys: Mapping[str, str | None]) -> dict[str, str]:
    """Keys that only inform (the run and call a send belongs to), each left out when
    empty or longer than the service allows."""
    return {
        key: value
        for key, value in keys.items()
        if value and len(value) <= METADATA_MAX_VALUE_LENGTH
    }
