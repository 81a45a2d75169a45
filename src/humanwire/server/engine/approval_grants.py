"""Standing approvals (``/approvals/grants``): made, listed and revoked by the account's
API; read by every new request (``Approvals._start_approval``), which one live grant of its
account covering its action approves at once.

A grant is read from the store at the request's time (live: not revoked, not expired), so
a revocation or an expiry stops it at once, on every replica. The bounds keep a request's
check linear and small: at most ``MAX_LIVE_GRANTS`` live grants per account, each with at
most ``MAX_MATCH_ENTRIES`` arguments (``humanwire.types.grants``).
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime, timezone
from typing import Any

from humanwire.types.approvals import ApprovalAction
from humanwire.types.grants import GRANT_ID, Grant, GrantCreateRequest, covers

from ..config import ServiceConfig
from ..errors import InvalidRequest, NotFound
from ..store.protocol import Store
from ..store.records import AuditDraft, GrantRecord
from ._common import Account
from .runtime import _iso, _timestamp

__all__ = [
    "MAX_LIVE_GRANTS",
    "covering_grant",
    "create_grant",
    "epoch_of",
    "grant_wire",
    "revoke_grant",
]

MAX_LIVE_GRANTS = 100
"""Live grants one account holds at most (a request checks each of its action's)."""


def grant_wire(record: GrantRecord) -> dict[str, Any]:
    grant = Grant(
        grant_id=record.id,
        action_name=record.action_name,
        match=record.match,
        expires_at=_timestamp(record.expires_at),
        granted_by=record.granted_by,
        created_at=_timestamp(record.created_at),
        revoked_at=None if record.revoked_at is None else _timestamp(record.revoked_at),
    )
    return grant.model_dump(mode="json", by_alias=True)


def epoch_of(at: datetime) -> float:
    """Seconds since the epoch of a time from the wire (without an offset: UTC)."""
    return (at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)).timestamp()


async def create_grant(
    store: Store,
    config: ServiceConfig,
    account: Account,
    body: GrantCreateRequest,
    person_id: str | None = None,
) -> GrantRecord:
    """A new grant, once the account's bounds allow it (400 naming the field otherwise),
    written to the audit log as ``approval.grant_created``: by ``person_id`` from the
    console (who is then ``grantedBy`` too), else by the account's key
    (``POST /approvals/grants``)."""
    if body.action_name not in config.approvals_grantable:
        raise InvalidRequest(
            f"{body.action_name!r} may not be granted: the service's [approvals] grantable "
            "names the actions a standing approval may cover",
            field="actionName",
        )
    now = time.time()
    expires_at = epoch_of(body.expires_at)
    if expires_at <= now:
        raise InvalidRequest("expiresAt must be in the future", field="expiresAt")
    if expires_at > now + config.approvals_max_grant:
        raise InvalidRequest(
            f"expiresAt must be at most {config.approvals_max_grant:g} seconds from now "
            "([approvals] max_grant)",
            field="expiresAt",
        )
    if await store.get_person(account.id, body.granted_by) is None:
        raise InvalidRequest(
            f"grantedBy: no person {body.granted_by!r} in this account", field="grantedBy"
        )
    if len(await store.live_grants(account.id, now)) >= MAX_LIVE_GRANTS:
        raise InvalidRequest(
            f"an account holds at most {MAX_LIVE_GRANTS} live grants: revoke one first",
            field="actionName",
        )
    record = GrantRecord(
        id="grt_" + secrets.token_urlsafe(18),
        account_id=account.id,
        action_name=body.action_name,
        match=body.match,
        granted_by=body.granted_by,
        created_at=now,
        expires_at=expires_at,
    )
    await store.insert_grant(record)
    data = {
        "grantId": record.id,
        "actionName": record.action_name,
        "match": record.match,
        "expiresAt": _iso(record.expires_at),
        "grantedBy": record.granted_by,
        "via": "api" if person_id is None else "console",
    }
    actor = None if person_id is None else {"person": person_id}
    await store.append_audit(
        account.id, [AuditDraft(now, "approval.grant_created", record.id, actor, data)]
    )
    return record


async def revoke_grant(
    store: Store, account: Account, grant_id: str, person_id: str | None = None
) -> GrantRecord:
    """Revokes one live grant of the account (404 for any other: unknown, another
    account's, expired or revoked before), written to the audit log as
    ``approval.grant_revoked``: by ``person_id`` from the console, else by the account's
    key (``DELETE /approvals/grants/{grantId}``)."""
    now = time.time()
    if not GRANT_ID.fullmatch(grant_id) or not await store.revoke_grant(account.id, grant_id, now):
        raise NotFound(f"no live grant {grant_id!r}", field="grantId")
    found = await store.get_grant(account.id, grant_id)
    assert found is not None
    data = {
        "grantId": found.id,
        "actionName": found.action_name,
        "grantedBy": found.granted_by,
        "via": "api" if person_id is None else "console",
    }
    actor = None if person_id is None else {"person": person_id}
    await store.append_audit(
        account.id, [AuditDraft(now, "approval.grant_revoked", found.id, actor, data)]
    )
    return found


async def covering_grant(
    store: Store, account_id: str, action: ApprovalAction | None
) -> GrantRecord | None:
    """The oldest live grant of the account that covers ``action``, if one does."""
    if action is None:
        return None
    arguments = action.model_dump()["arguments"]
    for grant in await store.live_grants(account_id, time.time(), action.name):
        if covers(grant.match, arguments):
            return grant
    return None
