"""The people directory's Telegram start link at the engine (``engine.people``), on both
stores: what is kept of a token (its hash only), a link past its time binds nothing, a
newer link or the address replaced voids it. The service's side over loopback with the
Telegram fake is tests/providers/test_telegram_people.py."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

from engine_support import account, engine

from humanwire.server.engine import Account, Engine
from humanwire.server.engine.people import START_SCOPE, START_TTL
from humanwire.types.people import (
    PersonConfirmRequest,
    PersonCreateRequest,
    PersonUpdateRequest,
)

__all__ = ["account", "engine"]

CHAT = "100000777"


async def _linked(engine: Engine, account: Account) -> tuple[str, str]:
    """A person with an unbound telegram address, and the token of its start link."""
    person = await engine.people.create(
        account,
        PersonCreateRequest.model_validate({"name": "Ada", "addresses": [{"channel": "telegram"}]}),
    )
    sent = await engine.people.confirm(
        account, person.person_id, PersonConfirmRequest(channel="telegram")
    )
    assert sent.start_link is not None and sent.interaction_id is None
    return person.person_id, parse_qs(urlsplit(sent.start_link).query)["start"][0]


async def test_only_the_tokens_hash_is_kept(engine: Engine, account: Account) -> None:
    _, token = await _linked(engine, account)
    kept = await engine.store.provider_states(START_SCOPE)
    assert len(kept) == 1 and token not in repr(kept)


async def test_a_link_past_its_time_binds_nothing(engine: Engine, account: Account) -> None:
    person_id, token = await _linked(engine, account)
    people = engine.people
    now = people._runtime.clock()
    people._runtime = replace(people._runtime, clock=lambda: now + START_TTL + 1)
    assert (await people.bind_chat("telegram", token, CHAT)).bound is False
    people._runtime = replace(people._runtime, clock=lambda: now + START_TTL - 1)
    # Refused once as expired, it is gone: it binds nothing later either.
    assert (await people.bind_chat("telegram", token, CHAT)).bound is False
    [address] = (await people.get(account, person_id)).addresses
    assert address.confirmed is False


async def test_a_link_just_in_time_binds(engine: Engine, account: Account) -> None:
    person_id, token = await _linked(engine, account)
    people = engine.people
    now = people._runtime.clock()
    people._runtime = replace(people._runtime, clock=lambda: now + START_TTL - 1)
    assert (await people.bind_chat("telegram", token, CHAT)).bound is True
    [address] = (await people.get(account, person_id)).addresses
    assert (address.to, address.confirmed) == (CHAT, True)
    assert await engine.store.provider_states(START_SCOPE) == []


async def test_the_address_replaced_voids_its_link(engine: Engine, account: Account) -> None:
    person_id, token = await _linked(engine, account)
    await engine.people.update(
        account,
        person_id,
        PersonUpdateRequest.model_validate({"addresses": [{"channel": "telegram"}]}),
    )
    assert (await engine.people.bind_chat("telegram", token, CHAT)).bound is False


async def test_another_channel_or_a_malformed_token_binds_nothing(
    engine: Engine, account: Account
) -> None:
    _, token = await _linked(engine, account)
    assert (await engine.people.bind_chat("discord", token, CHAT)).bound is False
    assert (await engine.people.bind_chat("telegram", token + "!", CHAT)).bound is False
    assert (await engine.people.bind_chat("telegram", "", CHAT)).bound is False
    assert (await engine.people.bind_chat("telegram", token, CHAT)).bound is True
