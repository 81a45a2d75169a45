"""Approvals decided later, for every framework that pauses a run at a tool call (the
OpenAI Agents SDK, Google ADK): the form goes out without holding the request, the
decision comes back by the status long-poll or the ``form.received`` webhook, maybe in
another process, and each approval is used once.

- :func:`send_approval_form` sends one call's approval form (no "edit" choice: a paused
  call runs with its own arguments or not at all) and returns its :class:`PendingApproval`.
- :func:`decision_from_status` / :func:`wait_for_decision` /
  :func:`decisions_from_service` read decisions from the service;
  :func:`rejection_message` is what the model reads when the call does not run.
- :func:`parse_delivery` verifies and parses a webhook delivery.
- :class:`ClaimStore` / :class:`FileClaimStore`: the atomic "first one wins" that runs an
  approved call once, however often a resume is attempted.

Framework-neutral: the core client and :mod:`humanwire.approval` only.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    decision_from_values,
    timeout_decision,
)
from humanwire.types import METADATA_MAX_VALUE_LENGTH, FormReceivedEvent, InteractionStatus
from humanwire.webhooks import SIGNATURE_HEADER, parse_event

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire
    from humanwire.types import Event

__all__ = [
    "DEFAULT_APPROVAL_WINDOW",
    "RESUME_KEY",
    "ClaimStore",
    "FileClaimStore",
    "PendingApproval",
    "approval_window",
    "approver_source",
    "decision_from_status",
    "decisions_from_service",
    "metadata_value",
    "parse_delivery",
    "rejection_message",
    "send_approval_form",
    "service_client",
    "wait_for_decision",
]

DEFAULT_APPROVAL_WINDOW = 3600
"""Seconds an approval form stays open when the approver does not set ``follow_up_time``:
a paused run can wait longer than a held HTTP request."""

RESUME_KEY = "humanwire_resume"
"""The metadata key naming which adapter sent an approval form (``langgraph``,
``openai_agents``, ``google_adk``...), so each webhook receiver leaves the others' alone."""


@dataclass(frozen=True)
class PendingApproval:
    """A tool call waiting for a person: what it is and where its form is."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    interaction_id: str
    form_url: str | None = None
    default_on_timeout: Literal["approve", "reject"] = "reject"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingApproval:
        return cls(**dict(data))


def metadata_value(what: str, value: str) -> str:
    """``value`` when it can travel as a metadata value, else a ``ValueError`` naming
    ``what`` (a run id, a session id...)."""
    if not value or len(value) > METADATA_MAX_VALUE_LENGTH:
        raise ValueError(
            f"the {what} must be 1 to {METADATA_MAX_VALUE_LENGTH} characters to travel "
            f"in the approval's metadata, got {len(value)}"
        )
    return value


def approval_window(approver: Approver) -> float:
    """Seconds the form stays open: the approver's ``follow_up_time``, else
    :data:`DEFAULT_APPROVAL_WINDOW`."""
    return float(approver.follow_up_time or DEFAULT_APPROVAL_WINDOW)


async def send_approval_form(
    approver: Approver,
    *,
    call_id: str,
    tool_name: str,
    arguments: dict[str, Any],
    idempotency_key: str,
    metadata: Mapping[str, str],
    description: str | None = None,
) -> PendingApproval:
    """Send the approval form of one tool call without holding the request (the answer
    comes by the status long-poll or the webhook), open for :func:`approval_window`.
    The same ``idempotency_key`` gets the same form back."""
    kwargs = approver.form_request(
        ApprovalRequest(tool_name, arguments, description),
        # A paused call runs with its own arguments or not at all: no "edit" choice.
        allow_edit=False,
        wait=False,
        idempotency_key=idempotency_key,
        metadata=metadata,
    )
    kwargs["follow_up_time"] = approval_window(approver)
    response = await getattr(approver.async_client.forms, approver.channel)(**kwargs)
    return PendingApproval(
        call_id=call_id,
        tool_name=tool_name,
        arguments=arguments,
        interaction_id=response.interaction_id,
        form_url=response.form_url,
        default_on_timeout=approver.default_on_timeout,
    )


def approver_source(approver: Approver | None) -> Callable[[], Approver]:
    """The host's approver, built from the environment on first use when not given."""
    holder: list[Approver] = [approver] if approver is not None else []

    def get() -> Approver:
        if not holder:
            holder.append(Approver())
        return holder[0]

    return get


def service_client(approver: Approver | None, client: AsyncHumanWire | None) -> AsyncHumanWire:
    """``client``, else the approver's, else one from the environment."""
    if client is not None:
        return client
    if approver is not None:
        return approver.async_client
    from humanwire._client import AsyncHumanWire

    return AsyncHumanWire()


# --- decisions --------------------------------------------------------------------------


def decision_from_status(
    status: InteractionStatus, *, default_on_timeout: Literal["approve", "reject"] = "reject"
) -> ApprovalDecision | None:
    """The decision an approval's status carries; the timeout default once its form
    closed without a submission; ``None`` while it is still open."""
    if isinstance(status.result, FormReceivedEvent):
        return decision_from_values(
            status.result.payload.values, interaction_id=status.interaction_id
        )
    if status.ended:
        return timeout_decision(default_on_timeout, interaction_id=status.interaction_id)
    return None


async def wait_for_decision(client: AsyncHumanWire, pending: PendingApproval) -> ApprovalDecision:
    """Hold on the service (the status long-poll, 60 s a request) until the approval is
    submitted or its window closes."""
    status = await client.interactions.wait(pending.interaction_id)
    decision = decision_from_status(status, default_on_timeout=pending.default_on_timeout)
    assert decision is not None  # wait() returns once the interaction ended
    return decision


async def decisions_from_service(
    pending: Mapping[str, PendingApproval],
    known: Mapping[str, ApprovalDecision],
    client: AsyncHumanWire,
) -> dict[str, ApprovalDecision] | None:
    """``known`` (decisions by call id) completed with the other paused calls' decisions
    as the service has them; ``None`` while any of them is still open."""
    decisions = dict(known)
    for call_id, approval in pending.items():
        if call_id in decisions:
            continue
        status = await client.interactions.status(approval.interaction_id)
        decision = decision_from_status(status, default_on_timeout=approval.default_on_timeout)
        if decision is None:
            return None
        decisions[call_id] = decision
    return decisions


def rejection_message(action: str, decision: ApprovalDecision) -> str:
    """What the model reads instead of the tool's output when the call does not run."""
    if decision.timed_out:
        return (
            f"{action} was not run: no approval decision arrived in time "
            "(timeout; rejected by default)."
        )
    if decision.decision == "respond":
        return f"{action} was not run. The human answered instead: {decision.comment or ''}".strip()
    if decision.approved:  # approved with edited arguments: a paused call cannot take them
        return f"{action} was not run: the approver changed its arguments; call it again with them."
    reason = f" Reason: {decision.comment}" if decision.comment else ""
    return f"{action} was not run: a human rejected it.{reason}"


# --- webhooks ---------------------------------------------------------------------------


def parse_delivery(
    body: bytes | str | Mapping[str, Any] | FormReceivedEvent,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
) -> Event:
    """The event a webhook delivery carries. With ``secret`` the ``Humanwire-Signature``
    header is verified against the raw body first, and a delivery that cannot be trusted
    raises ``WebhookVerificationError``."""
    if isinstance(body, (FormReceivedEvent, Mapping)):
        if secret is not None:
            raise TypeError("verifying a signature needs the raw body (bytes or str)")
        if isinstance(body, FormReceivedEvent):
            return body
        body = json.dumps(dict(body))
    signature = None
    if secret is not None:
        lowered = {key.lower(): value for key, value in (headers or {}).items()}
        signature = lowered.get(SIGNATURE_HEADER.lower(), "")
    return parse_event(body, signature=signature, secret=secret)


# --- used once --------------------------------------------------------------------------


class ClaimStore(Protocol):
    """Which approvals were used. ``claim(key)`` must be atomic across processes:
    ``True`` for the first caller of a key, ``False`` for every later one."""

    def claim(self, key: str) -> bool: ...


class FileClaimStore:
    """One empty file per claimed key in ``directory`` (its name the key's SHA-256),
    created exclusively: atomic across processes on one machine or a shared volume."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def claim(self, key: str) -> bool:
        name = hashlib.sha256(key.encode()).hexdigest()
        try:
            fd = os.open(self.directory / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        os.close(fd)
        return True
