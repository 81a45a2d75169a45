"""The people directory: ``/people`` (ask a person with ``person=`` wherever a send
takes ``to``). Addresses are given as mappings of ``channel`` and ``to``, in the order
the person is tried on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from humanwire._http import Flow
from humanwire.errors import invalid_request
from humanwire.types.people import (
    Delegation,
    DelegationCreateRequest,
    DelegationList,
    Person,
    PersonConfirmation,
    PersonConfirmRequest,
    PersonCreateRequest,
    PersonList,
    PersonUpdateRequest,
)

from ._base import ModeT, Resource, _Core, build, endpoint, path_id

__all__ = ["Delegations", "People"]

MAX_PEOPLE_PAGE = 500

Address = Mapping[str, str]
"""``{"channel": "sms", "to": "+12025550100"}``."""


def _person_path(person_id: str) -> str:
    return f"/people/{path_id(person_id, 'personId')}"


class Delegations(Resource[ModeT]):
    """A person's out-of-office delegations (``/people/{personId}/delegations``): while
    they are away, from ``starts_at`` until ``ends_at``, the requests that ask them ask
    the delegate in their place (the same delegations as the console's Out of office)."""

    @endpoint
    def create(
        self,
        person_id: str,
        *,
        delegate: str,
        ends_at: datetime,
        starts_at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[Delegation]:
        """``POST /people/{personId}/delegations`` (``starts_at`` left out: now; a
        datetime without a timezone is UTC). ``InvalidRequestError`` names the field
        refused (oneself or a loop: ``delegate``; an end past, not after the start or
        over 90 days after it: ``endsAt``; an overlapping one of the person's:
        ``startsAt``); ``NotFoundError`` a person not of the account."""
        body = build(
            DelegationCreateRequest, delegate=delegate, starts_at=starts_at, ends_at=ends_at
        )
        return self._post(
            f"{_person_path(person_id)}/delegations",
            body,
            Delegation,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def list(self, person_id: str) -> Flow[DelegationList]:
        """``GET /people/{personId}/delegations``: those that hold or are to come, the
        person's own and those to them, in the order they start."""
        path = f"{_person_path(person_id)}/delegations"
        return self._get(path, DelegationList)  # type: ignore[no-any-return]

    @endpoint
    def revoke(self, person_id: str, delegation_id: str) -> Flow[None]:
        """``DELETE /people/{personId}/delegations/{delegationId}``: ended at once
        (``NotFoundError`` for one not the person's own, or ended)."""
        did = path_id(delegation_id, "delegationId")
        return self._delete(f"{_person_path(person_id)}/delegations/{did}")


class People(Resource[ModeT]):
    """``delegations`` makes, lists and revokes a person's out-of-office delegations."""

    delegations: Delegations[ModeT]

    def __init__(self, client: _Core) -> None:
        super().__init__(client)
        self.delegations = Delegations(client)

    @endpoint
    def create(
        self,
        *,
        name: str,
        addresses: Sequence[Address] = (),
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[Person]:
        """``POST /people``: every address starts unconfirmed (``confirm``)."""
        body = build(
            PersonCreateRequest,
            name=name,
            addresses=[dict(a) for a in addresses],
            metadata=metadata,
        )
        return self._post("/people", body, Person, idempotency_key=idempotency_key)

    @endpoint
    def list(
        self,
        *,
        channel: str | None = None,
        to: str | None = None,
        after: str | int | None = None,
        limit: int | None = None,
    ) -> Flow[PersonList]:
        """``GET /people``: the account's people added after the cursor ``after`` (from
        the first without it), at most ``limit`` (default 100, at most 500); ``channel``
        and ``to`` keep those with an address on that channel, at that address. The
        page's ``cursor`` continues; a page shorter than ``limit`` is the last for now."""
        if after is not None and (isinstance(after, bool) or not isinstance(after, (str, int))):
            raise invalid_request("after must be a cursor (a page's cursor)", field="after")
        whole = isinstance(limit, int) and not isinstance(limit, bool)
        if limit is not None and not (whole and 1 <= limit <= MAX_PEOPLE_PAGE):
            raise invalid_request(f"limit must be from 1 to {MAX_PEOPLE_PAGE}", field="limit")
        params = {
            "channel": channel,
            "to": to,
            "after": None if after is None else str(after),
            "limit": limit,
        }
        return self._get("/people", PersonList, params=params)  # type: ignore[no-any-return]

    @endpoint
    def get(self, person_id: str) -> Flow[Person]:
        return self._get(_person_path(person_id), Person)  # type: ignore[no-any-return]

    @endpoint
    def update(
        self,
        person_id: str,
        *,
        name: str | None = None,
        addresses: Sequence[Address] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Flow[Person]:
        """``PATCH /people/{personId}``: each argument given replaces the person's
        (``metadata={}`` clears it). An address kept stays confirmed."""
        body = build(
            PersonUpdateRequest,
            name=name,
            addresses=None if addresses is None else [dict(a) for a in addresses],
            metadata=metadata,
        )
        return self._patch(_person_path(person_id), body, Person)

    @endpoint
    def delete(self, person_id: str) -> Flow[None]:
        return self._delete(_person_path(person_id))

    @endpoint
    def confirm(
        self,
        person_id: str,
        *,
        channel: str,
        to: str | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[PersonConfirmation]:
        """``POST /people/{personId}/confirm``: a one-time code goes to the person's
        address on ``channel`` (sms, whatsapp or email; the first there, or ``to``);
        their reply with it confirms the address. On telegram nothing is sent: the
        answer's ``start_link`` (``https://t.me/<bot>?start=<token>``, one-time) is for
        the person to open; the chat they open it in becomes the address, confirmed."""
        body = build(PersonConfirmRequest, channel=channel, to=to)
        return self._post(
            f"{_person_path(person_id)}/confirm",
            body,
            PersonConfirmation,
            idempotency_key=idempotency_key,
        )
