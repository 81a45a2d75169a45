"""The ``[address]`` section: how addresses are checked before a send."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
)

from ...config import (
    AddressConfig,
)
from .checks import HttpURL, Secret, Text, _about, _matching, _one_of, _seconds, _Strict
from .keys import _how, _keys

__all__ = ["AddressSettings"]


class AddressSettings(_Strict):
    """How ``address`` form fields are checked (docs/guides/checking-addresses.md)."""

    provider: Annotated[
        Annotated[str, AfterValidator(_one_of("structural", "google", "smarty", "nominatim"))],
        _about(
            "Who checks `address` form fields: `structural` (the shape, offline), `google` "
            "(Address Validation API), `smarty` (US Street and International) or `nominatim` "
            "(your own Nominatim or Photon at `url`)."
        ),
    ] = AddressConfig.provider
    api_key: Annotated[
        Secret | None, _about("Google: the Maps Platform API key (Address Validation API on).")
    ] = None
    auth_id: Annotated[Text | None, _about("Smarty: the secret key's Auth ID.")] = None
    auth_token: Annotated[Secret | None, _about("Smarty: the secret key's Auth Token.")] = None
    url: Annotated[
        HttpURL | None,
        _about(
            "Nominatim: your own server (`https://nominatim.example.com`), or Photon's `…/api`; "
            "never the public Nominatim (its usage policy forbids this use)."
        ),
    ] = None
    api_base: Annotated[
        HttpURL | None,
        _about("Google or Smarty: another address than the provider's own; tests use a fake."),
    ] = None
    region: Annotated[
        Annotated[str, AfterValidator(_matching(r"[A-Za-z]{2}", "a two-letter country code"))]
        | None,
        _about(
            "The country (ISO 3166-1 alpha-2, e.g. `US`) assumed for an address that names "
            "none; Smarty uses its US API for the US and unnamed countries."
        ),
    ] = None
    timeout: Annotated[
        float,
        _seconds(60),
        _about(
            "Seconds the provider has to answer one check; past it the address is unchecked "
            "(see `on_unavailable`)."
        ),
    ] = AddressConfig.timeout
    on_unavailable: Annotated[
        Annotated[str, AfterValidator(_one_of("accept", "refuse"))],
        _about(
            "An address the provider could not check (slow, down, over quota): `refuse` asks "
            "the person to send again later, `accept` takes it as typed; the person is told "
            "either way and keeps what they typed."
        ),
    ] = AddressConfig.on_unavailable

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)

    def config(self) -> AddressConfig:
        provider: Any = self.provider
        on_unavailable: Any = self.on_unavailable
        return AddressConfig(
            provider=provider,
            api_key=self.api_key.get_secret_value() if self.api_key else None,
            auth_id=self.auth_id,
            auth_token=self.auth_token.get_secret_value() if self.auth_token else None,
            url=self.url,
            api_base=self.api_base,
            region=self.region.upper() if self.region else None,
            timeout=self.timeout,
            on_unavailable=on_unavailable,
        )

    def problems(self) -> list[str]:
        needs = {
            "google": ("api_key",),
            "smarty": ("auth_id", "auth_token"),
            "nominatim": ("url",),
        }.get(self.provider, ())
        missing = [key for key in needs if getattr(self, key) is None]
        problems: list[str] = []
        if missing:
            problems.append(
                f"address.provider {self.provider} needs {_keys('address', missing)}: set "
                + " and ".join(_how("address", key) for key in missing)
            )
        host = urlsplit(self.url).hostname if self.url else None
        if self.provider == "nominatim" and host == "nominatim.openstreetmap.org":
            problems.append(
                "address.url: the public Nominatim's usage policy forbids checking a "
                "service's form answers with it; run your own Nominatim or Photon"
            )
        return problems
