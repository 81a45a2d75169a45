"""Approval requests: ``POST /approvals``, ``GET /approvals/{id}``, waiting for the
decision, ``POST /approvals/{id}/consume`` (an approved action is used once), and ``GET
/approvals`` (the account's requests listed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from humanwire._constants import MIN_POLL_INTERVAL
from humanwire._http import Flow, RequestSpec, Sleep, parse_nothing
from humanwire.errors import invalid_request
from humanwire.types import MAX_STATUS_WAIT, format_seconds
from humanwire.types.approvals import (
    Approval,
    ApprovalAction,
    ApprovalList,
    ApprovalOutcome,
    ApprovalRequest,
    Approver,
    ConsumeRequest,
    ConsumeResponse,
    Escalation,
    OnTimeout,
)
from humanwire.types.grants import Grant, GrantCreateRequest, GrantList

from ._base import ModeT, Resource, _Core, build, endpoint, path_id
from .interactions import _seconds

__all__ = [
    "MAX_APPROVAL_PAGE",
    "ActionSpec",
    "Approvals",
    "ApproverSpec",
    "EscalationSpec",
    "Grants",
]

MAX_APPROVAL_PAGE = 500
"""The most requests one ``GET /approvals`` returns."""

ApproverSpec = Approver | Mapping[str, Any]
"""An approver as a model or a dict: ``{"channel": "sms", "to": "+1202…"}``."""

ActionSpec = ApprovalAction | Mapping[str, Any]
"""The action a decision is about: ``{"name": "wire", "arguments": {...}}``."""

EscalationSpec = Escalation | Mapping[str, Any]
"""An escalation tier: ``{"after": 600, "approvers": [...]}``."""


def _plain(value: Any) -> Any:
    """A model given where a dict may be: its wire form, so ``build`` reads both alike."""
    to_wire = getattr(value, "to_wire", None)
    return to_wire() if callable(to_wire) else value


class Grants(Resource[ModeT]):
    """Standing approvals (``/approvals/grants``): a new request about ``action_name``
    whose arguments ``match`` covers is approved at once (``via="grant"``) until
    ``expires_at`` or until revoked."""

    @endpoint
    def create(
        self,
        *,
        action_name: str,
        match: Mapping[str, Any],
        expires_at: datetime,
        granted_by: str,
        idempotency_key: str | None = None,
    ) -> Flow[Grant]:
        """``POST /approvals/grants``. ``match`` maps an argument to a JSON value (equal
        exactly), ``{"oneOf": [...]}`` or ``{"prefix": "..."}``; ``granted_by`` is the
        person (``per_…``) the grant decides as. ``InvalidRequestError`` names the field
        refused (an action the service does not let be granted: ``actionName``)."""
        body = build(
            GrantCreateRequest,
            action_name=action_name,
            match=dict(match) if isinstance(match, Mapping) else match,
            expires_at=expires_at,
            granted_by=granted_by,
        )
        return self._post("/approvals/grants", body, Grant, idempotency_key=idempotency_key)

    @endpoint
    def list(self) -> Flow[GrantList]:
        """``GET /approvals/grants``: the account's live grants, the oldest first."""
        return self._get("/approvals/grants", GrantList)  # type: ignore[no-any-return]

    @endpoint
    def revoke(self, grant_id: str) -> Flow[None]:
        """``DELETE /approvals/grants/{grantId}``: it covers no request from now on
        (``NotFoundError`` for one not live in the account)."""
        return self._delete(f"/approvals/grants/{path_id(grant_id, 'grantId')}")


class Approvals(Resource[ModeT]):
    """Ask one or more people to approve an action, over any channel, and use the
    approval once.

    A decision nobody made in time is not an error: ``on_timeout`` decides it
    (``timed_out`` is true), or nothing does (``on_timeout="none"``: ``decision`` None).
    ``grants`` makes, lists and revokes standing approvals.
    """

    grants: Grants[ModeT]

    def __init__(self, client: _Core) -> None:
        super().__init__(client)
        self.grants = Grants(client)

    @endpoint
    def create(
        self,
        *,
        title: str,
        approvers: Sequence[ApproverSpec],
        action: ActionSpec | None = None,
        description: str | None = None,
        quorum: int | None = None,
        reject_quorum: int | None = None,
        escalation: Sequence[EscalationSpec] | None = None,
        remind_every: float | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        on_timeout: OnTimeout | None = None,
        allow_comment: bool | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[Approval]:
        """``POST /approvals``. With ``wait_time`` the request is held until the decision
        or ``wait_time`` seconds; a decision after that goes to webhooks as
        ``approval.decided`` (and :meth:`wait` / :meth:`get` read it)."""
        body = build(
            ApprovalRequest,
            title=title,
            description=description,
            action=_plain(action),
            approvers=[_plain(approver) for approver in approvers],
            quorum=quorum,
            reject_quorum=reject_quorum,
            escalation=None if escalation is None else [_plain(tier) for tier in escalation],
            remind_every=remind_every,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            on_timeout=on_timeout,
            allow_comment=allow_comment,
            metadata=metadata,
        )
        return self._post(
            "/approvals", body, Approval, wait=body.wait_time, idempotency_key=idempotency_key
        )

    @endpoint
    def get(self, interaction_id: str) -> Flow[Approval]:
        """``GET /approvals/{interactionId}``: the request as it stands."""
        return self._get_approval(interaction_id)

    def _get_approval(self, interaction_id: str) -> Flow[Approval]:
        path = f"/approvals/{path_id(interaction_id, 'interactionId')}"
        return self._get(path, Approval)  # type: ignore[no-any-return]

    @endpoint
    def wait(self, interaction_id: str, *, timeout: float | None = None) -> Flow[Approval]:
        """Wait until the request is decided (or its windows closed undecided), or
        ``timeout`` seconds pass (None: no limit). A timeout is not an error: the request
        comes back still ``pending``. Holds the interaction's status long-poll (60 s at a
        time), so it waits past the 600 s ``waitTime`` limit without polling."""
        if timeout is not None:
            timeout = _seconds(timeout, "timeout")
        path_id(interaction_id, "interactionId")  # refuse a bad id before any wait
        return self._wait(interaction_id, timeout)

    def _wait(self, interaction_id: str, timeout: float | None) -> Flow[Approval]:
        clock = self._client._options.clock
        deadline = None if timeout is None else clock() + timeout
        escaped = path_id(interaction_id, "interactionId")
        while True:
            started = clock()
            approval = yield from self._get_approval(interaction_id)
            if approval.status == "ended":
                return approval
            remaining = None if deadline is None else deadline - clock()
            if remaining is not None and remaining <= 0:
                return approval
            hold = float(MAX_STATUS_WAIT)
            if remaining is not None:
                hold = min(hold, round(remaining, 3))
            # The status long-poll holds until the interaction changes: the record is
            # read again then (or after the hold), never in a tight loop.
            # Read as nothing: only its timing matters (the record says the rest).
            yield from self._request(
                RequestSpec(
                    "GET",
                    f"/interactions/{escaped}/status",
                    parse_nothing,
                    params={"wait": format_seconds(hold)},
                    wait=hold,
                )
            )
            elapsed = clock() - started
            if elapsed < MIN_POLL_INTERVAL:
                pause = MIN_POLL_INTERVAL - elapsed
                if deadline is not None:
                    pause = min(pause, max(0.0, deadline - clock()))
                yield Sleep(pause)

    @endpoint
    def consume(
        self,
        interaction_id: str,
        *,
        action_digest: str | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[ConsumeResponse]:
        """``POST /approvals/{interactionId}/consume``: claim the approval for the action
        about to run, whose digest is ``action_digest`` (``humanwire.types.approvals.
        action_digest({"name": …, "arguments": …})``; None for a request without an
        action). Call it *before* the action runs: ``AlreadyConsumedError`` (409) means it
        ran already, ``NotApprovedError`` (409) that it is rejected or still pending, and a
        digest that differs is a 400 ``InvalidRequestError`` on ``actionDigest``.

        Each call has a fresh ``Idempotency-Key`` (kept across the client's own retries),
        so a retry of a lost answer is answered as the first try was, while a step run
        again is told ``already_consumed``. A durable engine's step passes its own
        ``idempotency_key`` (the same for every run of that step), so the step run again
        after a crash (or an activity retried as a whole) is answered as its first run
        was."""
        body = build(ConsumeRequest, action_digest=action_digest)
        path = f"/approvals/{path_id(interaction_id, 'interactionId')}/consume"
        return self._post(path, body, ConsumeResponse, idempotency_key=idempotency_key)

    @endpoint
    def list(
        self,
        *,
        status: Literal["pending", "ended"] | None = None,
        decision: ApprovalOutcome | None = None,
        action_name: str | None = None,
        person_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        after: str | int | None = None,
        limit: int | None = None,
    ) -> Flow[ApprovalList]:
        """``GET /approvals``: the account's requests made after the cursor ``after``
        (from the first without it), in the order they were made, at most ``limit``
        (default 100, at most 500); each filter given keeps only the requests that match
        it (``metadata``: each key with exactly its value, sent as ``metadata[key]=value``).
        The page's ``cursor`` continues: a page shorter than ``limit`` is the last one
        for now, and the same cursor later finds the requests made since."""
        if after is not None and (isinstance(after, bool) or not isinstance(after, (str, int))):
            raise invalid_request("after must be a cursor (a page's cursor)", field="after")
        whole = isinstance(limit, int) and not isinstance(limit, bool)
        if limit is not None and not (whole and 1 <= limit <= MAX_APPROVAL_PAGE):
            raise invalid_request(f"limit must be from 1 to {MAX_APPROVAL_PAGE}", field="limit")
        if metadata is not None and not (
            isinstance(metadata, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
        ):
            raise invalid_request(
                "metadata must map string keys to string values", field="metadata"
            )
        params: dict[str, str | int | None] = {
            "status": status,
            "decision": decision,
            "actionName": action_name,
            "personId": person_id,
            **{f"metadata[{key}]": value for key, value in (metadata or {}).items()},
            "after": None if after is None else str(after),
            "limit": limit,
        }
        return self._get("/approvals", ApprovalList, params=params)  # type: ignore[no-any-return]
