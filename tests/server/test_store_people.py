"""The people directory in both stores: a person with their addresses in order, listed
in the order added and by address, updated (addresses replaced, or kept), deleted, never
another account's; a confirmation code spent once, counted when missed, void at the
limit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from humanwire.server.store import SQLiteStore, Store
from humanwire.server.store.postgres import PostgresStore
from humanwire.server.store.records import (
    AccountRecord,
    PeopleQuery,
    PersonAddressRecord,
    PersonRecord,
)
from pg_support import STORES, drop_schema, new_schema


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        lite = SQLiteStore(str(tmp_path / "people.db"))
        try:
            yield lite
        finally:
            await lite.close()
        return
    schema, url = new_schema("hw_people")
    pg = PostgresStore(url, connect_timeout=5)
    try:
        yield pg
    finally:
        await pg.close()
        drop_schema(schema)


ADA_SMS = PersonAddressRecord("sms", "+12025550100")
ADA_MAIL = PersonAddressRecord("email", "ada@example.com", confirmed_at=1000.25)


def person(n: int, account: str = "acct_1", **changes: Any) -> PersonRecord:
    fields: dict[str, Any] = {
        "id": f"per_{n}",
        "account_id": account,
        "name": f"Ada {n} — é",
        "addresses": (ADA_SMS, ADA_MAIL),
        "created_at": 1000.5 + n,
        "updated_at": 1000.5 + n,
        "metadata": {"team": "ops"},
    }
    fields.update(changes)
    return PersonRecord(**fields)


async def accounts(store: Store) -> None:
    for n in (1, 2):
        await store.insert_account(AccountRecord(f"acct_{n}", f"A{n}", f"hash_{n}", False, 1.0))


async def test_a_person_round_trips_with_their_addresses_in_order(store: Store) -> None:
    await accounts(store)
    await store.insert_person(person(1))
    found = await store.get_person("acct_1", "per_1")
    assert found is not None and found.seq > 0
    assert replace(found, seq=0) == person(1)
    assert await store.get_person("acct_2", "per_1") is None  # another account's
    await store.insert_person(person(2, addresses=(), metadata=None))
    bare = await store.get_person("acct_1", "per_2")
    assert bare is not None and bare.addresses == () and bare.metadata is None


async def test_people_listed_in_order_paged_and_by_address(store: Store) -> None:
    await accounts(store)
    for n in range(1, 6):
        await store.insert_person(person(n, addresses=(ADA_SMS,) if n % 2 else (ADA_MAIL,)))
    await store.insert_person(person(9, account="acct_2"))
    first = await store.list_people(PeopleQuery("acct_1", limit=2))
    assert [p.id for p in first] == ["per_1", "per_2"]
    assert first[0].addresses == (ADA_SMS,) and first[1].addresses == (ADA_MAIL,)
    rest = await store.list_people(PeopleQuery("acct_1", after=first[-1].seq, limit=10))
    assert [p.id for p in rest] == ["per_3", "per_4", "per_5"]
    assert [p.addresses for p in rest] == [(ADA_SMS,), (ADA_MAIL,), (ADA_SMS,)]
    at = PeopleQuery("acct_1", channel="sms", to_addr="+12025550100")
    assert [p.id for p in await store.list_people(at)] == ["per_1", "per_3", "per_5"]
    # Every address of a person found by one of them comes back.
    assert [p.id for p in await store.list_people(replace(at, account_id="acct_2"))] == ["per_9"]
    listed = await store.list_people(replace(at, account_id="acct_2"))
    assert listed[0].addresses == (ADA_SMS, ADA_MAIL)
    nobody = replace(at, to_addr="+12025550199")
    assert await store.list_people(nobody) == []


async def test_update_replaces_the_addresses_or_keeps_them(store: Store) -> None:
    await accounts(store)
    await store.insert_person(person(1))
    renamed = replace(person(1), name="Ada L.", metadata=None, updated_at=2000.0)
    assert await store.update_person(renamed, addresses=False)
    found = await store.get_person("acct_1", "per_1")
    assert found is not None and found.name == "Ada L." and found.metadata is None
    assert found.addresses == (ADA_SMS, ADA_MAIL) and found.updated_at == 2000.0
    moved = replace(renamed, addresses=(ADA_MAIL, PersonAddressRecord("slack", "U0123ABCD")))
    assert await store.update_person(moved, addresses=True)
    found = await store.get_person("acct_1", "per_1")
    assert found is not None and found.addresses == moved.addresses
    # Another account's person is not touched.
    assert not await store.update_person(replace(moved, account_id="acct_2"), addresses=True)
    assert not await store.delete_person("acct_2", "per_1")
    assert await store.delete_person("acct_1", "per_1")
    assert await store.get_person("acct_1", "per_1") is None
    assert not await store.delete_person("acct_1", "per_1")
    assert await store.list_people(PeopleQuery("acct_1")) == []


async def test_a_code_confirms_its_address_once(store: Store) -> None:
    await accounts(store)
    await store.insert_person(person(1))
    assert await store.person_code("per_1", "sms", ADA_SMS.to_addr) is None
    assert not await store.set_person_code("acct_2", "per_1", "sms", ADA_SMS.to_addr, "h", 9.0)
    assert await store.set_person_code("acct_1", "per_1", "sms", ADA_SMS.to_addr, "h1", 9.0)
    code = await store.person_code("per_1", "sms", ADA_SMS.to_addr)
    assert code is not None and (code.position, code.code_hash, code.expires_at) == (0, "h1", 9.0)
    assert await store.confirm_person_address(code, 5.5)
    assert not await store.confirm_person_address(code, 6.0)  # spent
    assert await store.person_code("per_1", "sms", ADA_SMS.to_addr) is None
    found = await store.get_person("acct_1", "per_1")
    assert found is not None and found.addresses[0].confirmed_at == 5.5


async def test_a_code_sent_again_voids_the_one_before(store: Store) -> None:
    await accounts(store)
    await store.insert_person(person(1))
    await store.set_person_code("acct_1", "per_1", "sms", ADA_SMS.to_addr, "old", 9.0)
    old = await store.person_code("per_1", "sms", ADA_SMS.to_addr)
    await store.set_person_code("acct_1", "per_1", "sms", ADA_SMS.to_addr, "new", 9.0)
    assert old is not None and not await store.confirm_person_address(old, 5.0)


async def test_a_missed_code_is_void_at_the_limit(store: Store) -> None:
    await accounts(store)
    await store.insert_person(person(1))
    await store.set_person_code("acct_1", "per_1", "sms", ADA_SMS.to_addr, "h", 9.0)
    for misses in (1, 2):
        code = await store.person_code("per_1", "sms", ADA_SMS.to_addr)
        assert code is not None and code.misses == misses - 1
        await store.miss_person_code(code, 3)
    code = await store.person_code("per_1", "sms", ADA_SMS.to_addr)
    assert code is not None and code.misses == 2
    await store.miss_person_code(code, 3)
    assert await store.person_code("per_1", "sms", ADA_SMS.to_addr) is None
    assert not await store.confirm_person_address(code, 5.0)


async def test_a_start_token_binds_its_address_to_the_chat_once(store: Store) -> None:
    await accounts(store)
    unbound = PersonAddressRecord("telegram", "")
    await store.insert_person(replace(person(1), addresses=(ADA_SMS, unbound)))
    assert await store.set_person_code("acct_1", "per_1", "telegram", "", "tok", 9.0)
    code = await store.person_code("per_1", "telegram", "")
    assert code is not None and code.position == 1
    assert await store.bind_person_address(code, "100000001", 5.5)
    assert not await store.bind_person_address(code, "100000002", 6.0)  # spent
    found = await store.get_person("acct_1", "per_1")
    assert found is not None
    assert found.addresses == (ADA_SMS, PersonAddressRecord("telegram", "100000001", 5.5))
    assert await store.person_code("per_1", "telegram", "100000001") is None
