"""``POST /approvals`` (a decision asked of people, held like a form), ``GET /approvals``
(the account's requests listed), ``GET /approvals/{interactionId}``, ``POST
/approvals/{interactionId}/consume`` (used once) and ``GET /audit`` (the account's
hash-chained audit log)."""

from __future__ import annotations

import re
from typing import cast

from pydantic import TypeAdapter

from humanwire.types import (
    METADATA_MAX_KEY_LENGTH,
    METADATA_MAX_KEYS,
    METADATA_MAX_VALUE_LENGTH,
    InteractionState,
)
from humanwire.types.approvals import (
    Approval,
    ApprovalList,
    ApprovalOutcome,
    ApprovalRequest,
    AuditPage,
    ConsumeRequest,
    ConsumeResponse,
)
from humanwire.types.grants import MAX_MATCH_ENTRIES, Grant, GrantCreateRequest, GrantList

from ..engine.approval_grants import MAX_LIVE_GRANTS
from ..engine.approvals import approval_wire
from ..errors import InvalidRequest
from ..store.records import ApprovalQuery
from ._api import ApiCall, Operation, PathParam, Payload, QueryParam

__all__ = ["operations"]

_INTERACTION = PathParam("interactionId", "Returned by POST /approvals.")
_GRANT = PathParam("grantId", "Returned by POST /approvals/grants.")
_CURSOR = re.compile(r"[0-9]{1,18}")
_MAX_LIMIT = 1000
_DEFAULT_LIMIT = 100
_MAX_LIST_LIMIT = 500
"""Requests one ``GET /approvals`` returns at most (each is read with its approvers)."""
_STATUSES = ("pending", "ended")
_DECISIONS = ("approved", "rejected")
_PERSON = re.compile(r"per_[A-Za-z0-9_-]{1,64}")
_MAX_ACTION_NAME = 200


async def _request(call: ApiCall) -> Payload:
    body = call.body_as(ApprovalRequest)
    return approval_wire(
        await call.engine.approvals.request_approval(call.account, body, call.send)
    )


def _limit(call: ApiCall, most: int) -> int:
    text = call.query.get("limit", str(_DEFAULT_LIMIT))
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= most:
        raise InvalidRequest(f"limit must be a whole number from 1 to {most}", field="limit")
    return int(text)


def _one_of(call: ApiCall, name: str, allowed: tuple[str, ...]) -> str | None:
    value = call.query.get(name)
    if value is not None and value not in allowed:
        raise InvalidRequest(f"{name} must be one of {', '.join(allowed)}", field=name)
    return value


def _metadata_filters(call: ApiCall) -> tuple[tuple[str, str], ...]:
    """The ``metadata[key]=value`` parameters, each as a request's ``metadata`` may hold
    it (no NUL: PostgreSQL's text cannot hold one), at most as many as it has keys."""
    found: list[tuple[str, str]] = []
    for name, value in call.query.multi_items():
        if not name.startswith("metadata["):
            continue
        key = name[len("metadata[") : -1]
        if not 1 <= len(key) <= METADATA_MAX_KEY_LENGTH or "\x00" in key:
            raise InvalidRequest(
                f"a metadata key is 1 to {METADATA_MAX_KEY_LENGTH} characters (no NUL): "
                "metadata[key]=value",
                field="metadata",
            )
        if len(value) > METADATA_MAX_VALUE_LENGTH or "\x00" in value:
            raise InvalidRequest(
                f"{name} must be at most {METADATA_MAX_VALUE_LENGTH} characters (no NUL)",
                field=name,
            )
        found.append((key, value))
    if len(found) > METADATA_MAX_KEYS:
        raise InvalidRequest(
            f"at most {METADATA_MAX_KEYS} metadata filters (a request has at most "
            f"{METADATA_MAX_KEYS} keys)",
            field="metadata",
        )
    return tuple(found)


async def _list(call: ApiCall) -> Payload:
    after_text = call.query.get("after", "0")
    if not _CURSOR.fullmatch(after_text):
        raise InvalidRequest("after must be a cursor from an earlier page", field="after")
    action_name = call.query.get("actionName")
    # NUL: no name a request can store on PostgreSQL has one, and its driver refuses it.
    if action_name is not None and (
        not 1 <= len(action_name) <= _MAX_ACTION_NAME or "\x00" in action_name
    ):
        raise InvalidRequest(
            f"actionName must be 1 to {_MAX_ACTION_NAME} characters (no NUL)",
            field="actionName",
        )
    person_id = call.query.get("personId")
    if person_id is not None and not _PERSON.fullmatch(person_id):
        raise InvalidRequest("personId must be a person's id (per_…)", field="personId")
    query = ApprovalQuery(
        account_id=call.account.id,
        after=int(after_text),
        limit=_limit(call, _MAX_LIST_LIMIT),
        status=cast("InteractionState | None", _one_of(call, "status", _STATUSES)),
        decision=cast("ApprovalOutcome | None", _one_of(call, "decision", _DECISIONS)),
        action_name=action_name,
        person_id=person_id,
        metadata=_metadata_filters(call),
    )
    found = await call.engine.approvals.list_approvals(query)
    # Each request exactly as GET /approvals/{interactionId} gives it (its nulls kept).
    return {"approvals": [approval_wire(a) for a in found.approvals], "cursor": found.cursor}


async def _get(call: ApiCall) -> Payload:
    return approval_wire(
        await call.engine.approvals.get_approval(call.account, call.path("interactionId"))
    )


async def _consume(call: ApiCall) -> Payload:
    body = call.body_as(ConsumeRequest)
    return await call.engine.approvals.consume_approval(
        call.account, call.path("interactionId"), body
    )


async def _create_grant(call: ApiCall) -> Payload:
    return await call.engine.approvals.create_grant(call.account, call.body_as(GrantCreateRequest))


async def _list_grants(call: ApiCall) -> Payload:
    return await call.engine.approvals.list_grants(call.account)


async def _revoke_grant(call: ApiCall) -> Payload:
    await call.engine.approvals.revoke_grant(call.account, call.path("grantId"))
    return None


async def _audit(call: ApiCall) -> Payload:
    after_text = call.query.get("after", "0")
    if not _CURSOR.fullmatch(after_text):
        raise InvalidRequest("after must be a cursor from an earlier page", field="after")
    return await call.engine.approvals.audit_page(
        call.account, int(after_text), _limit(call, _MAX_LIMIT)
    )


def operations() -> list[Operation]:
    response = TypeAdapter(Approval)
    return [
        Operation(
            "POST",
            "/approvals",
            _request,
            operation_id="requestApproval",
            summary="Ask people to approve an action",
            description="Each approver is asked over their channel (`link`: nothing is sent; "
            "the page's address comes back in `links`). With `waitTime`, held until decided "
            "or the wait ends; a decision after it goes to the webhooks as `approval.decided`. "
            "`onTimeout` applies when the windows close undecided.",
            tag="approvals",
            body=TypeAdapter(ApprovalRequest),
            response=response,
        ),
        Operation(
            "GET",
            "/approvals",
            _list,
            operation_id="listApprovals",
            summary="The account's approval requests",
            description="In the order they were made, each as `GET /approvals/{interactionId}` "
            "shows it; only the account's own. Paged like `GET /events`: `cursor` continues "
            "(`after`), and a page shorter than `limit` is the last one for now. Each "
            "filter left out keeps every request.",
            tag="approvals",
            response=TypeAdapter(ApprovalList),
            query=(
                QueryParam(
                    "status",
                    "Only the requests still `pending`, or those `ended`.",
                    {"type": "string", "enum": list(_STATUSES)},
                ),
                QueryParam(
                    "decision",
                    "Only the requests settled this way.",
                    {"type": "string", "enum": list(_DECISIONS)},
                ),
                QueryParam(
                    "actionName",
                    "Only the requests about an action of this name.",
                    {"type": "string", "minLength": 1, "maxLength": _MAX_ACTION_NAME},
                ),
                QueryParam(
                    "personId",
                    "Only the requests one of whose approvers is this person.",
                    {"type": "string", "pattern": _PERSON.pattern.join("^$")},
                ),
                QueryParam(
                    "metadata",
                    "Only the requests whose `metadata` holds each key with exactly this "
                    "value, sent as `metadata[key]=value` (for instance "
                    f"`metadata[run]=r-118`); at most {METADATA_MAX_KEYS}.",
                    {
                        "type": "object",
                        "maxProperties": METADATA_MAX_KEYS,
                        "propertyNames": {
                            "minLength": 1,
                            "maxLength": METADATA_MAX_KEY_LENGTH,
                            "pattern": "^[^\\u0000]*$",
                        },
                        "additionalProperties": {
                            "type": "string",
                            "maxLength": METADATA_MAX_VALUE_LENGTH,
                            "pattern": "^[^\\u0000]*$",
                        },
                    },
                    deep_object=True,
                ),
                QueryParam(
                    "after",
                    "A cursor (`cursor` of an earlier page): the requests made after it. "
                    "Left out: from the first.",
                    {"type": "string", "pattern": "^[0-9]{1,18}$"},
                ),
                QueryParam(
                    "limit",
                    f"Requests per page (1 to {_MAX_LIST_LIMIT}, default {_DEFAULT_LIMIT}).",
                    {"type": "integer", "minimum": 1, "maximum": _MAX_LIST_LIMIT},
                ),
            ),
        ),
        Operation(
            "POST",
            "/approvals/grants",
            _create_grant,
            operation_id="createGrant",
            summary="Approve an action's matching requests for a while (a standing approval)",
            description="A new request about `actionName` whose arguments `match` covers is "
            'approved at once, with `via: "grant"` and the grant\'s `grantId` in its decision '
            "and audit entry, until `expiresAt` or until revoked. `match` maps an argument to "
            'a JSON value (equal exactly), `{"oneOf": [...]}` or `{"prefix": "..."}` (at most '
            f"{MAX_MATCH_ENTRIES} arguments). 400 on `actionName` for an action the service's "
            "`[approvals] grantable` does not name, on `expiresAt` past or beyond `max_grant`, "
            "on `match` for a form it does not know, on `grantedBy` for a person not of the "
            f"account; at most {MAX_LIVE_GRANTS} live grants per account.",
            tag="approvals",
            status=201,
            body=TypeAdapter(GrantCreateRequest),
            response=TypeAdapter(Grant),
        ),
        Operation(
            "GET",
            "/approvals/grants",
            _list_grants,
            operation_id="listGrants",
            summary="The account's live standing approvals",
            description="Neither expired nor revoked, the oldest first; only the account's own.",
            tag="approvals",
            response=TypeAdapter(GrantList),
        ),
        Operation(
            "DELETE",
            "/approvals/grants/{grantId}",
            _revoke_grant,
            operation_id="revokeGrant",
            summary="Revoke a standing approval",
            description="It covers no request from now on (on every replica). 404 for a grant "
            "not live in the account (unknown, another account's, expired or revoked).",
            tag="approvals",
            status=204,
            errors=(404,),
            path_params=(_GRANT,),
        ),
        Operation(
            "GET",
            "/approvals/{interactionId}",
            _get,
            operation_id="getApproval",
            summary="An approval request as it is now",
            tag="approvals",
            response=response,
            errors=(404,),
            path_params=(_INTERACTION,),
        ),
        Operation(
            "POST",
            "/approvals/{interactionId}/consume",
            _consume,
            operation_id="consumeApproval",
            summary="Use an approval once",
            description='200 `{"consumed": true}` the first time, on an approved request '
            "whose `actionDigest` matches; then 409 `already_consumed`. 409 `not_approved` "
            "while rejected or pending; 400 for another digest.",
            tag="approvals",
            body=TypeAdapter(ConsumeRequest),
            response=TypeAdapter(ConsumeResponse),
            errors=(404, 409),
            path_params=(_INTERACTION,),
        ),
        Operation(
            "GET",
            "/audit",
            _audit,
            operation_id="getAudit",
            summary="The account's audit log",
            description="Hash-chained entries in order: every approval request, decision, "
            "reminder, escalation, timeout and consumption. `next` is the cursor of the "
            "following page (null at the end).",
            tag="approvals",
            response=TypeAdapter(AuditPage),
            query=(
                QueryParam(
                    "after",
                    "A cursor (`next` of an earlier page): the entries after it.",
                    {"type": "string", "pattern": "^[0-9]{1,18}$"},
                ),
                QueryParam(
                    "limit",
                    f"Entries per page (1 to {_MAX_LIMIT}, default {_DEFAULT_LIMIT}).",
                    {"type": "integer", "minimum": 1, "maximum": _MAX_LIMIT},
                ),
            ),
        ),
    ]
