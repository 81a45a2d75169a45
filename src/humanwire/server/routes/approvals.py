"""``POST /approvals`` (a decision asked of people, held like a form),
``GET /approvals/{interactionId}``, ``POST /approvals/{interactionId}/consume`` (used
once) and ``GET /audit`` (the account's hash-chained audit log)."""

from __future__ import annotations

import re

from pydantic import TypeAdapter

from humanwire.types.approvals import (
    Approval,
    ApprovalRequest,
    AuditPage,
    ConsumeRequest,
    ConsumeResponse,
)

from ..engine.approvals import approval_wire
from ..errors import InvalidRequest
from ._api import ApiCall, Operation, PathParam, Payload, QueryParam

__all__ = ["operations"]

_INTERACTION = PathParam("interactionId", "Returned by POST /approvals.")
_CURSOR = re.compile(r"[0-9]{1,18}")
_MAX_LIMIT = 1000
_DEFAULT_LIMIT = 100


async def _request(call: ApiCall) -> Payload:
    body = call.body_as(ApprovalRequest)
    return approval_wire(
        await call.engine.approvals.request_approval(call.account, body, call.send)
    )


async def _get(call: ApiCall) -> Payload:
    return approval_wire(
        await call.engine.approvals.get_approval(call.account, call.path("interactionId"))
    )


async def _consume(call: ApiCall) -> Payload:
    body = call.body_as(ConsumeRequest)
    return await call.engine.approvals.consume_approval(
        call.account, call.path("interactionId"), body
    )


async def _audit(call: ApiCall) -> Payload:
    after_text = call.query.get("after", "0")
    if not _CURSOR.fullmatch(after_text):
        raise InvalidRequest("after must be a cursor from an earlier page", field="after")
    limit_text = call.query.get("limit", str(_DEFAULT_LIMIT))
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= _MAX_LIMIT:
        raise InvalidRequest(f"limit must be a whole number from 1 to {_MAX_LIMIT}", field="limit")
    return await call.engine.approvals.audit_page(call.account, int(after_text), int(limit_text))


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
