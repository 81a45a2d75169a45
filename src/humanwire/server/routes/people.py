"""The people directory: ``POST /people``, ``GET /people`` (paged, by address), ``GET |
PATCH | DELETE /people/{personId}`` and ``POST /people/{personId}/confirm``."""

from __future__ import annotations

import contextlib
import re

from pydantic import TypeAdapter, ValidationError

from humanwire.types.people import (
    PERSON_ID,
    Person,
    PersonAddressInput,
    PersonChannel,
    PersonConfirmation,
    PersonConfirmRequest,
    PersonCreateRequest,
    PersonList,
    PersonUpdateRequest,
)

from ..errors import InvalidRequest
from ..store.records import PeopleQuery
from ._api import ApiCall, Operation, PathParam, Payload, QueryParam

__all__ = ["operations"]

_PERSON = PathParam("personId", "Returned by POST /people (`per_…`).", PERSON_ID.pattern)
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
    ]
