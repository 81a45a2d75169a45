"""``[address]``: from the file and the environment, what each provider needs, what is
refused, what ``humanwire serve`` says and prints (never a secret)."""

from __future__ import annotations

from pathlib import Path

import pytest

from humanwire.server.config import AddressConfig, ServiceConfig, startup_lines
from humanwire.server.runtime.settings import (
    SettingsError,
    effective_configuration,
    format_configuration,
    load_settings,
)

KEY = "AIza-5ecret-key"


def test_address_settings_default_to_the_structural_check() -> None:
    config = load_settings(None, {}, {}).to_service_config()
    assert config.address == AddressConfig()
    assert not [line for line in startup_lines(config) if line.startswith("address")]


def test_address_settings_from_the_file_and_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "hw.toml"
    path.write_text(
        '[address]\nprovider = "google"\nregion = "gb"\ntimeout = 2.5\n'
        'on_unavailable = "accept"\napi_base = "http://127.0.0.1:9/"\n'
    )
    settings = load_settings(path, {"HUMANWIRE_ADDRESS_API_KEY": KEY}, {})
    address = settings.to_service_config().address
    assert address == AddressConfig(
        provider="google",
        api_key=KEY,
        api_base="http://127.0.0.1:9",
        region="GB",
        timeout=2.5,
        on_unavailable="accept",
    )
    text = format_configuration(effective_configuration(settings))
    assert KEY not in text and "address.api_key" in text
    [line] = [line for line in startup_lines(settings.to_service_config()) if "address" in line]
    assert line == (
        "address   → Google (at http://127.0.0.1:9; timeout 2.5 s; "
        "unchecked addresses accepted as typed)"
    )


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"HUMANWIRE_ADDRESS_PROVIDER": "google"}, "address.provider google needs address.api_key"),
        (
            {"HUMANWIRE_ADDRESS_PROVIDER": "smarty", "HUMANWIRE_ADDRESS_AUTH_ID": "id"},
            "address.provider smarty needs address.auth_token",
        ),
        (
            {"HUMANWIRE_ADDRESS_PROVIDER": "nominatim"},
            "address.provider nominatim needs address.url",
        ),
        (
            {
                "HUMANWIRE_ADDRESS_PROVIDER": "nominatim",
                "HUMANWIRE_ADDRESS_URL": "https://nominatim.openstreetmap.org",
            },
            "the public Nominatim's usage policy forbids",
        ),
        ({"HUMANWIRE_ADDRESS_PROVIDER": "here"}, "must be one of structural, google"),
        ({"HUMANWIRE_ADDRESS_ON_UNAVAILABLE": "maybe"}, "must be one of accept, refuse"),
        ({"HUMANWIRE_ADDRESS_REGION": "USA"}, "must be a two-letter country code"),
        ({"HUMANWIRE_ADDRESS_TIMEOUT": "0"}, "address.timeout: must be a number of seconds"),
    ],
)
def test_address_settings_refused_with_the_reason(env: dict[str, str], problem: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(None, env, {})
    assert problem in str(raised.value)


async def test_an_address_validator_object_takes_precedence() -> None:
    from humanwire.server.engine import Engine
    from humanwire.server.forms.address import StructuralAddressValidator

    validator = StructuralAddressValidator(require_postal_code=False)
    engine = Engine(ServiceConfig(address_validator=validator))
    try:
        assert engine.addresses is validator
    finally:
        await engine.store.close()
