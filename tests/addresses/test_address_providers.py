"""Each address provider's validator against its contract fake over loopback HTTP: a
valid address, one corrected, one not found, one answered too late; a provider down, a
refused key; the cache; ``on_unavailable``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from address_fakes import (
    API_KEY,
    AUTH_ID,
    AUTH_TOKEN,
    CORRECTED,
    GOOGLE_FORMATTED,
    NOT_FOUND,
    OSM_SUGGESTION,
    OSM_VALID,
    SLOW,
    SMARTY_LINE,
    UK_CORRECTED,
    UK_VALID,
    VALID,
    AddressFake,
    AddressFakeServer,
    GoogleFake,
    NominatimFake,
    SmartyFake,
)
from humanwire.server.config import AddressConfig
from humanwire.server.forms.address import (
    CANNOT_CHECK_MESSAGE,
    CORRECTED_MESSAGE,
    NOT_FOUND_MESSAGE,
    UNAVAILABLE_MESSAGE,
    AddressCheck,
)
from humanwire.server.forms.address_providers import (
    TOO_LONG_MESSAGE,
    ProviderAddressValidator,
    build_address_validator,
)

TIMEOUT = 1.0


@dataclass(frozen=True)
class Case:
    """One provider: how to configure it against its fake, and what it answers."""

    name: str
    fake: type[AddressFake]
    valid: str
    stored: str
    corrected: str
    suggestion: str

    def config(self, base_url: str, **changes: Any) -> AddressConfig:
        if self.name == "google":
            config = AddressConfig(provider="google", api_key=API_KEY, api_base=base_url)
        elif self.name.startswith("smarty"):
            config = AddressConfig(
                provider="smarty", auth_id=AUTH_ID, auth_token=AUTH_TOKEN, api_base=base_url
            )
        elif self.name == "photon":
            config = AddressConfig(provider="nominatim", url=f"{base_url}/api")
        else:
            config = AddressConfig(provider="nominatim", url=base_url)
        return replace(config, timeout=TIMEOUT, **changes)


CASES = [
    Case("google", GoogleFake, VALID, GOOGLE_FORMATTED, CORRECTED, GOOGLE_FORMATTED),
    Case("smarty-us", SmartyFake, VALID, SMARTY_LINE, CORRECTED, SMARTY_LINE),
    Case(
        "smarty-international",
        SmartyFake,
        UK_VALID,
        "10 Downing Street, London, SW1A 2AA, United Kingdom",
        UK_CORRECTED,
        "10 Downing Street, London, SW1A 2AA, United Kingdom",
    ),
    Case("nominatim", NominatimFake, OSM_VALID, OSM_VALID, CORRECTED, OSM_SUGGESTION),
    Case("photon", NominatimFake, OSM_VALID, OSM_VALID, CORRECTED, OSM_SUGGESTION),
]


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[type[AddressFake], AddressFakeServer]]:
    servers = {
        kind: AddressFakeServer(kind(delay=TIMEOUT * 4))
        for kind in (GoogleFake, SmartyFake, NominatimFake)
    }
    for server in servers.values():
        server.start()
    # The first async request of a process loads httpx's async machinery (over half a
    # second on a busy machine): not part of any provider's answer time.
    warm_up = AddressConfig(
        provider="google", api_key=API_KEY, api_base=servers[GoogleFake].base_url
    )
    asyncio.run(check(warm_up, VALID))
    try:
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(params=CASES, ids=[case.name for case in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    value: Case = request.param
    return value


async def check(config: AddressConfig, address: str) -> AddressCheck:
    validator = build_address_validator(config)
    try:
        return await validator.validate(address)
    finally:
        await validator.aclose()


async def test_a_valid_address_is_accepted_as_the_provider_writes_it(
    case: Case, fakes: dict[type[AddressFake], AddressFakeServer]
) -> None:
    result = await check(case.config(fakes[case.fake].base_url), case.valid)
    assert result == AddressCheck(ok=True, normalized=case.stored)


async def test_a_corrected_address_is_offered_and_accepted_when_sent_back(
    case: Case, fakes: dict[type[AddressFake], AddressFakeServer]
) -> None:
    config = case.config(fakes[case.fake].base_url)
    result = await check(config, case.corrected)
    assert result == AddressCheck(ok=False, message=CORRECTED_MESSAGE, suggestion=case.suggestion)
    # The person accepts: the suggestion is what comes back, and it is valid.
    accepted = await check(config, case.suggestion)
    assert accepted.ok and accepted.normalized == case.suggestion


async def test_an_address_not_found_is_the_fields_error(
    case: Case, fakes: dict[type[AddressFake], AddressFakeServer]
) -> None:
    result = await check(case.config(fakes[case.fake].base_url), NOT_FOUND)
    assert result == AddressCheck(ok=False, message=NOT_FOUND_MESSAGE)


async def test_a_provider_too_slow_leaves_the_address_unchecked(
    case: Case, fakes: dict[type[AddressFake], AddressFakeServer]
) -> None:
    base = fakes[case.fake].base_url
    started = time.monotonic()
    refused = await check(case.config(base), SLOW)
    assert time.monotonic() - started < TIMEOUT * 3
    assert refused == AddressCheck(ok=False, message=UNAVAILABLE_MESSAGE, unchecked=True)
    accepted = await check(case.config(base, on_unavailable="accept"), SLOW + "\n")
    assert accepted == AddressCheck(ok=True, normalized=SLOW, unchecked=True)


async def test_a_provider_down_leaves_the_address_unchecked(case: Case) -> None:
    down = AddressFakeServer(case.fake())
    down.start()
    base = down.base_url
    down.stop()  # nothing listens there any more: connection refused
    result = await check(case.config(base), case.valid)
    assert result == AddressCheck(ok=False, message=UNAVAILABLE_MESSAGE, unchecked=True)


async def test_refused_credentials_leave_the_address_unchecked_and_are_logged(
    fakes: dict[type[AddressFake], AddressFakeServer], caplog: pytest.LogCaptureFixture
) -> None:
    google = AddressConfig(
        provider="google", api_key="wrong", api_base=fakes[GoogleFake].base_url, timeout=TIMEOUT
    )
    smarty = AddressConfig(
        provider="smarty",
        auth_id=AUTH_ID,
        auth_token="wrong",
        api_base=fakes[SmartyFake].base_url,
        timeout=TIMEOUT,
        on_unavailable="accept",
    )
    with caplog.at_level(logging.WARNING, logger="humanwire.addresses"):
        assert (await check(google, VALID)).message == UNAVAILABLE_MESSAGE
        assert (await check(smarty, VALID)) == AddressCheck(
            ok=True, normalized=VALID, unchecked=True
        )
    assert "refused the credentials" in caplog.text
    assert "wrong" not in caplog.text  # never a secret in the log


async def test_google_sends_the_key_in_a_header_and_the_named_country(
    fakes: dict[type[AddressFake], AddressFakeServer],
) -> None:
    fake = fakes[GoogleFake].fake
    config = AddressConfig(
        provider="google", api_key=API_KEY, api_base=fakes[GoogleFake].base_url, region="DE"
    )
    await check(config, "10 Downing Street\nLondon SW1A 2AA\nUnited Kingdom")
    await check(config, VALID)
    first, second = fake.requests[-2:]
    assert first["body"] == {
        "address": {
            "addressLines": ["10 Downing Street", "London SW1A 2AA", "United Kingdom"],
            "regionCode": "GB",
        }
    }
    assert second["body"]["address"]["regionCode"] == "DE"  # none named: the setting
    assert first["api_key"] == API_KEY


async def test_smarty_picks_its_us_or_international_api(
    fakes: dict[type[AddressFake], AddressFakeServer],
) -> None:
    fake = fakes[SmartyFake].fake
    config = AddressConfig(
        provider="smarty",
        auth_id=AUTH_ID,
        auth_token=AUTH_TOKEN,
        api_base=fakes[SmartyFake].base_url,
    )
    await check(config, VALID + ", USA")
    await check(config, UK_VALID)
    us, international = fake.requests[-2:]
    assert us["api"] == "us-street" and us["params"] == {"street": VALID, "candidates": "1"}
    # The key pair as HTTP Basic credentials, never in the URL.
    assert us["headers"]["authorization"].startswith("Basic ")
    assert international["api"] == "international"
    assert international["params"]["country"] == "GB"


async def test_answers_are_remembered_unchecked_ones_briefly(
    fakes: dict[type[AddressFake], AddressFakeServer],
) -> None:
    server = fakes[GoogleFake]
    validator = build_address_validator(
        AddressConfig(
            provider="google",
            api_key=API_KEY,
            api_base=server.base_url,
            timeout=TIMEOUT,
            unchecked_ttl=TIMEOUT,
        )
    )
    assert isinstance(validator, ProviderAddressValidator)
    try:
        before = server.fake.count()
        first = await validator.validate(VALID)
        again = await validator.validate("  " + VALID.replace(" ", "  "))
        assert first == again and server.fake.count() == before + 1
        # A timeout: the same post's second check (the engine's) does not wait again...
        started = time.monotonic()
        await validator.validate(SLOW)
        await validator.validate(SLOW)
        assert time.monotonic() - started < TIMEOUT * 1.8
        assert server.fake.count() == before + 2
        # ...but a little later the provider is asked again.
        await asyncio.sleep(TIMEOUT)
        await validator.validate(SLOW)
        assert server.fake.count() == before + 3
    finally:
        await validator.aclose()


async def test_a_slow_provider_does_not_hold_the_event_loop(
    fakes: dict[type[AddressFake], AddressFakeServer],
) -> None:
    config = AddressConfig(
        provider="google", api_key=API_KEY, api_base=fakes[GoogleFake].base_url, timeout=TIMEOUT
    )
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        await asyncio.gather(*(check(config, f"{n} {SLOW}") for n in range(5)))
    finally:
        ticker.cancel()
    # Five checks waited on the provider together, for one timeout, and the loop ran on.
    assert ticks >= (TIMEOUT / 0.01) * 0.5


async def test_an_address_too_long_is_refused_without_asking(
    fakes: dict[type[AddressFake], AddressFakeServer],
) -> None:
    server = fakes[GoogleFake]
    config = AddressConfig(provider="google", api_key=API_KEY, api_base=server.base_url)
    before = server.fake.count()
    result = await check(config, VALID + ", " + "x" * 300)
    assert result == AddressCheck(ok=False, message=TOO_LONG_MESSAGE)
    assert server.fake.count() == before


async def test_an_answer_not_shaped_as_documented_leaves_the_address_unchecked(
    fakes: dict[type[AddressFake], AddressFakeServer], caplog: pytest.LogCaptureFixture
) -> None:
    config = AddressConfig(provider="google", api_key=API_KEY, api_base=fakes[GoogleFake].base_url)
    with caplog.at_level(logging.WARNING, logger="humanwire.addresses"):
        result = await check(config, "1 Garbled Road, Springfield 12345")
    assert result == AddressCheck(ok=False, message=UNAVAILABLE_MESSAGE, unchecked=True)
    assert "not shaped as documented" in caplog.text
    assert "Garbled" not in caplog.text  # never the address


async def test_an_address_the_provider_does_not_take_is_refused_for_good(
    fakes: dict[type[AddressFake], AddressFakeServer],
) -> None:
    # Google answers 400 for a country it does not cover: asking again will not help.
    server = fakes[GoogleFake]
    config = AddressConfig(provider="google", api_key=API_KEY, api_base=server.base_url)
    validator = build_address_validator(config)
    try:
        tokyo = "1-1 Chiyoda, Chiyoda City, Tokyo 100-8111, Japan"
        before = server.fake.count()
        result = await validator.validate(tokyo)
        assert result == AddressCheck(ok=False, message=CANNOT_CHECK_MESSAGE, unchecked=True)
        assert server.fake.requests[-1]["body"]["address"]["regionCode"] == "JP"
        assert await validator.validate(tokyo) == result
        assert server.fake.count() == before + 1  # remembered like an answer
    finally:
        await validator.aclose()
    accepting = replace(config, on_unavailable="accept")
    assert (await check(accepting, "1-1 Chiyoda, Tokyo 100-8111, Japan")).unchecked
