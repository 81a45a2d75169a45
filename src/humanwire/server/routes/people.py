"""The people directory: ``POST /people``, ``GET /people`` (paged, by address), ``GET |
PATCH | DELETE /people/{personId}``, ``POST /people/{personId}/confirm`` and a person's
out-of-office delegations (``POST | GET /people/{personId}/delegations``, ``DELETE
/people/{personId}/delegations/{delegationId}``: the console's ``/console/away`` through
the same engine calls, ``engine.approvals.delegations``)."""

from __future__ import annotations

import contextlib
import re
import time

from pydantic import TypeAdapter, ValidationError

from humanwire.types.people import (
    DELEGATION_ID,
    PERSON_ID,
    Delegation,
    DelegationCreateRequest,
    DelegationList,
    Person,
    PersonAddressInput,
    PersonChannel,
    PersonConfirmation,
    PersonConfirmRequest,
    PersonCreateRequest,
    PersonList,
    PersonUpdateRequest,
)

from ..engine.approval_delegations import API_FIELDS, delegation_wire
from ..engine.approval_grants import epoch_of
from ..errors import InvalidRequest
from ..store.records import PeopleQuery
from ._api import ApiCall, Operation, PathParam, Payload, QueryParam

__all__ = ["operations"]

_PERSON = PathParam("personId", "Returned by POST /people (`per_…`).", PERSON_ID.pattern)
_DELEGATION = PathParam(
    "delegationId",
    "Returned by POST /people/{personId}/delegations (`dlg_…`).",
    DELEGATION_ID.pattern,
)
_CURSOR = re.compile(r"[0-9]{1,18}")
_DEFAULT_LIMIT = 100
_MAX_LIMIT = 500
_CHANNELS: tuple[str, ...] = PersonChannel.__args__  # type: ignore[attr-defined]
_MAX_TO = 254


async def _create(call: ApiCall) -> Payload:
    return await call.engine.people.create(call.account, call.body_as(PersonCreateRequest))


async def _list(call: ApiCall) -> Payload:
    after = call.query.get("after", "0")
    if not _CURSOR.fullmatch(after):
        raise InvalidRequest("after must be a cursor from an earlier page", field="after")
    limit = call.query.get("limit", str(_DEFAULT_LIMIT))
    if not limit.isascii() or not limit.isdigit() or not 1 <= int(limit) <= _MAX_LIMIT:
        raise InvalidRequest(f"limit must be a whole number from 1 to {_MAX_LIMIT}", field="limit")
    channel, to = call.query.get("channel"), call.query.get("to")
    if channel is not None and channel not in _CHANNELS:
        raise InvalidRequest(f"channel must be one of {', '.join(_CHANNELS)}", field="channel")
    # NUL: no stored address has one, and PostgreSQL's driver refuses it.
    if to is not None and (not 1 <= len(to) <= _MAX_TO or "\x00" in to):
        raise InvalidRequest(f"to must be 1 to {_MAX_TO} characters (no NUL)", field="to")
    if channel in ("email", None) and to is not None and "@" in to:
        # As an address is stored (its domain normalized); one that is none finds nobody.
        with contextlib.suppress(ValidationError):
            to = PersonAddressInput(channel="email", to=to).to
    query = PeopleQuery(
        account_id=call.account.id,
        after=int(after),
        limit=int(limit),
        channel=channel,
        to_addr=to,
    )
    return await call.engine.people.list(query)


async def _get(call: ApiCall) -> Payload:
    return await call.engine.people.get(call.account, call.path("personId"))


async def _update(call: ApiCall) -> Payload:
    return await call.engine.people.update(
        call.account, call.path("personId"), call.body_as(PersonUpdateRequest)
    )


async def _delete(call: ApiCall) -> Payload:
    await call.engine.people.delete(call.account, call.path("personId"))
    return None


async def _confirm(call: ApiCall) -> Payload:
    return await call.engine.people.confirm(
        call.account, call.path("personId"), call.body_as(PersonConfirmRequest)
    )


async def _delegate(call: ApiCall) -> Payload:
    body = call.body_as(DelegationCreateRequest)
    starts_at = time.time() if body.starts_at is None else epoch_of(body.starts_at)
    record = await call.engine.approvals.delegations.create(
        call.account,
        call.path("personId"),
        body.delegate,
        starts_at,
        epoch_of(body.ends_at),
        API_FIELDS,
    )
    return delegation_wire(record)


async def _delegations(call: ApiCall) -> Payload:
    found = await call.engine.approvals.delegations.of(call.account, call.path("personId"))
    return DelegationList(delegations=[delegation_wire(d) for d in found])


async def _revoke_delegation(call: ApiCall) -> Payload:
    await call.engine.approvals.delegations.end(
        call.account, call.path("personId"), call.path("delegationId")
    )
    return None


def operations() -> list[Operation]:
    person = TypeAdapter(Person)
    return [
        Operation(
            "POST",
            "/people",
            _create,
            operation_id="createPerson",
            summary="Add a person to the directory",
            description="A name and addresses on any channels, in the order to try them. "
            "Each address starts unconfirmed (`POST /people/{personId}/confirm`); an "
            "unconfirmed address is never used for the person.",
            tag="people",
            status=201,
            body=TypeAdapter(PersonCreateRequest),
            response=person,
        ),
        Operation(
            "GET",
            "/people",
            _list,
            operation_id="listPeople",
            summary="The account's people",
            description="In the order they were added; only the account's own. Paged like "
            "`GET /events`: `cursor` continues (`after`), and a page shorter than `limit` "
            "is the last one for now. `channel`: only the people with an address on it; "
            "`to`: only those with that address (on `channel` when given).",
            tag="people",
            response=TypeAdapter(PersonList),
            query=(
                QueryParam(
                    "channel",
                    "Only the people with an address on this channel.",
                    {"type": "string", "enum": list(_CHANNELS)},
                ),
                QueryParam(
                    "to",
                    "Only the people with this address (a number, a Slack member id, an "
                    "email address).",
                    {"type": "string", "minLength": 1, "maxLength": _MAX_TO},
                ),
                QueryParam(
                    "after",
                    "A cursor (`cursor` of an earlier page): the people added after it. "
                    "Left out: from the first.",
                    {"type": "string", "pattern": "^[0-9]{1,18}$"},
                ),
                QueryParam(
                    "limit",
                    f"People per page (1 to {_MAX_LIMIT}, default {_DEFAULT_LIMIT}).",
                    {"type": "integer", "minimum": 1, "maximum": _MAX_LIMIT},
                ),
            ),
        ),
        Operation(
            "GET",
            "/people/{personId}",
            _get,
            operation_id="getPerson",
            summary="One person",
            tag="people",
            response=person,
            errors=(404,),
            path_params=(_PERSON,),
        ),
        Operation(
            "PATCH",
            "/people/{personId}",
            _update,
            operation_id="updatePerson",
            summary="Change a person",
            description="Each field given replaces the person's (`metadata: null` clears "
            "it). An address kept (same channel and `to`) stays confirmed; a new one "
            "starts unconfirmed.",
            tag="people",
            body=TypeAdapter(PersonUpdateRequest),
            response=person,
            errors=(404,),
            path_params=(_PERSON,),
        ),
        Operation(
            "DELETE",
            "/people/{personId}",
            _delete,
            operation_id="deletePerson",
            summary="Remove a person from the directory",
            tag="people",
            status=204,
            errors=(404,),
            path_params=(_PERSON,),
        ),
        Operation(
            "POST",
            "/people/{personId}/confirm",
            _confirm,
            operation_id="confirmPerson",
            summary="Send a person a code confirming an address",
            description="A one-time 6-digit code goes to the person's address on `channel` "
            "(the first there, or `to`) by sms, whatsapp or email; the person's reply "
            "with it, within `expiresAt`, confirms the address. On telegram nothing is "
            "sent (a bot cannot write first): the answer's `startLink` "
            "(`https://t.me/<bot>?start=<token>`, one-time) is for the person to open; "
            "the chat they open it in becomes the address, confirmed. Other channels: 400.",
            tag="people",
            body=TypeAdapter(PersonConfirmRequest),
            response=TypeAdapter(PersonConfirmation),
            errors=(404,),
            path_params=(_PERSON,),
        ),
        Operation(
            "POST",
            "/people/{personId}/delegations",
            _delegate,
            operation_id="createDelegation",
            summary="Send a person's approval requests to another while they are away",
            description="From `startsAt` (left out: now) until `endsAt`, a request that asks "
            "the person asks `delegate` in their place, who decides as themselves with "
            '`onBehalfOf` the person (docs/guides/console.md, "Out of office"; the same '
            "delegations as the console's). 400 on `delegate` for the person themselves or "
            "for a delegation back to the person over that time (a loop), on `endsAt` for "
            "an end not after the start, past, or over 90 days after it, on `startsAt` for "
            "a delegation of the person's already over an overlapping time; 404 on "
            "`personId` or `delegate` for a person not of the account.",
            tag="people",
            status=201,
            body=TypeAdapter(DelegationCreateRequest),
            response=TypeAdapter(Delegation),
            errors=(404,),
            path_params=(_PERSON,),
        ),
        Operation(
            "GET",
            "/people/{personId}/delegations",
            _delegations,
            operation_id="listDelegations",
            summary="A person's delegations that hold or are to come",
            description="The person's own (`personId` the person) and those to them "
            "(`delegate` the person), neither ended nor revoked, in the order they start.",
            tag="people",
            response=TypeAdapter(DelegationList),
            errors=(404,),
            path_params=(_PERSON,),
        ),
        Operation(
            "DELETE",
            "/people/{personId}/delegations/{delegationId}",
            _revoke_delegation,
            operation_id="revokeDelegation",
            summary="End a person's delegation at once",
            description="The next requests ask the person again; those handed to the "
            "delegate already stay theirs. 404 for a delegation not the person's own, or "
            "ended or revoked already.",
            tag="people",
            status=204,
            errors=(404,),
            path_params=(_PERSON, _DELEGATION),
        ),
    ]
