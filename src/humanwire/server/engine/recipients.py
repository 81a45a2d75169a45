"""The recipients role (``engine.recipients``): where a request that names a person of
the people directory in place of ``to`` is sent. Only a confirmed address is ever used
for a person (docs/people.md); the person's order decides between several."""

from __future__ import annotations

from collections.abc import Collection

from ..errors import InvalidRequest, NotFound
from ._common import Account
from .runtime import Runtime

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
