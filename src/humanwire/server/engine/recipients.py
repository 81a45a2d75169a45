"""The recipients role (``engine.recipients``): where a request that names a person of
the people directory in place of ``to`` is sent. Only a confirmed address is ever used
for a person (docs/people.md); the person's order decides between several."""

from __future__ import annotations

from collections.abc import Collection

from ..errors import InvalidRequest, NotFound
from ..store.records import PeopleQuery, PersonRecord
from ._common import Account
from .runtime import Runtime

_SAME_NUMBER = {"sms": ("sms", "whatsapp"), "whatsapp": ("sms", "whatsapp")}
"""Channels whose address is a phone number: a person confirmed on one is that number's
person on the other (and on calls)."""

__all__ = ["Recipients"]


class Recipients:
    """Finds a person's address for a send (see the module docstring)."""

    def __init__(self, runtime: Runtime) -> None:
        self._store = runtime.store

    async def address(
        self, account: Account, person_id: str, channels: Collection[str]
    ) -> tuple[str, str]:
        """``(channel, address)``: the person's first confirmed address, in their order,
        on one of ``channels``. Another account's person is not found (404); a person
        with no confirmed address there is a request the service cannot carry out (400,
        ``person``)."""
        person = await self._store.get_person(account.id, person_id)
        if person is None:
            raise NotFound(f"no person {person_id!r}", field="person")
        for address in person.addresses:
            if address.confirmed_at is not None and address.channel in channels:
                return address.channel, address.to_addr
        where = " or ".join(sorted(channels))
        unconfirmed = any(a.channel in channels for a in person.addresses)
        raise InvalidRequest(
            f"person {person_id!r} has no confirmed {where} address"
            + (" (confirm one: POST /people/{personId}/confirm)" if unconfirmed else ""),
            field="person",
        )

    async def person_at(self, account: Account, channel: str, to: str) -> str | None:
        """The account's person whose confirmed address ``to`` is (on ``channel``; a
        number on sms, whatsapp or a call is one person's on any of them), if one is."""
        for on in _channels_of(channel):
            query = PeopleQuery(account.id, limit=10, channel=on, to_addr=to)
            for person in await self._store.list_people(query):
                if _has_confirmed(person, channel, to):
                    return person.id
        return None

    async def confirmed(self, account: Account, person_id: str, channel: str, to: str) -> bool:
        """Whether ``to`` on ``channel`` is a confirmed address of the person (404 for
        another account's person)."""
        person = await self._store.get_person(account.id, person_id)
        if person is None:
            raise NotFound(f"no person {person_id!r}", field="person")
        return _has_confirmed(person, channel, to)


def _channels_of(channel: str) -> tuple[str, ...]:
    return _SAME_NUMBER.get("sms" if channel == "call" else channel, (channel,))


def _has_confirmed(person: PersonRecord, channel: str, to: str) -> bool:
    for address in person.addresses:
        if address.confirmed_at is None or address.channel not in _channels_of(channel):
            continue
        if address.to_addr == to or (channel == "email" and address.to_addr.lower() == to.lower()):
            return True
    return False
