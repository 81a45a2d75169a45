"""Address-validation providers behind ``AddressValidator``: Google's Address Validation
API, Smarty (US Street and International Street), and a self-hosted Nominatim or
Photon. Each is asked over REST with one ``httpx.AsyncClient`` (no SDK: Smarty's is
blocking, ``requests``-based, and would hold a thread per check), on the event loop,
within ``[address] timeout``. docs/guides/checking-addresses.md says how each answer is
read; docs/providers.md ("Addresses") why.

A provider that is slow, down, over quota or refuses the credentials leaves the address
*unchecked*: ``[address] on_unavailable`` accepts it as typed or refuses it with a
message saying so; either way the person's input is kept. Answers are remembered for
``cache_ttl`` seconds (the page and the engine check one post each; a person who resends
the same address costs one call), an unchecked one for ``unchecked_ttl`` seconds only
(the engine's check of the same post does not wait out a second timeout, a person who
sends again a little later is asked about again)."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..config import AddressConfig
from .address import (
    CANNOT_CHECK_MESSAGE,
    PART_SEPARATOR_PATTERN,
    UNAVAILABLE_MESSAGE,
    AddressCheck,
    AddressValidator,
    StructuralAddressValidator,
    country_name,
    country_of,
    same_address,
)

__all__ = [
    "GOOGLE_API_BASE",
    "MAX_CHECKED_LENGTH",
    "SMARTY_INTERNATIONAL_BASE",
    "SMARTY_US_BASE",
    "TOO_LONG_MESSAGE",
    "GoogleAddressValidator",
    "NominatimAddressValidator",
    "ProviderAddressValidator",
    "ProviderUnavailable",
    "SmartyAddressValidator",
    "build_address_validator",
]

logger = logging.getLogger("humanwire.addresses")

GOOGLE_API_BASE = "https://addressvalidation.googleapis.com"
SMARTY_US_BASE = "https://us-street.api.smarty.com"
SMARTY_INTERNATIONAL_BASE = "https://international-street.api.smarty.com"

MAX_CHECKED_LENGTH = 280
"""Longest address a provider is asked about (Google's own bound on its input); a
postal address is far shorter, and a paid call is not spent on a 10,000-character one."""
TOO_LONG_MESSAGE = f"This address is too long to check (at most {MAX_CHECKED_LENGTH} characters)."
NEEDS_UNIT_MESSAGE = "This address needs an apartment, suite or unit number. Add it and try again."


class ProviderUnavailable(Exception):
    """The provider gave no usable answer (a status other than 2xx, a body that is not
    what it documents); the message is for the log and never holds a secret. ``lasting``:
    asking again will not help (a 400: the provider does not take this address, e.g. a
    country it does not cover)."""

    def __init__(self, message: str, *, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting


def _parts(address: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(PART_SEPARATOR_PATTERN, address) if p.strip()]


def _tidy(address: str) -> str:
    """The text as typed, its parts joined with commas: what an unchecked or
    Nominatim-confirmed address is stored as."""
    return ", ".join(_parts(address))


class ProviderAddressValidator:
    """What the providers share: the client, the timeout, the cache, the policy for an
    address that could not be checked. A subclass implements ``lookup``."""

    name = "provider"
    attribution = ""
    """Shown under a suggested address when the data's licence asks for it."""

    def __init__(
        self, config: AddressConfig, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(config.timeout),
            transport=transport,
            headers={"User-Agent": "humanwire (address check)", "Accept": "application/json"},
            follow_redirects=False,
        )
        self._cache: OrderedDict[str, tuple[float, AddressCheck]] = OrderedDict()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def validate(self, address: str) -> AddressCheck:
        key = " ".join(address.split())
        if len(key) > MAX_CHECKED_LENGTH:
            return AddressCheck.not_found(TOO_LONG_MESSAGE)
        cached = self._cached(key)
        if cached is not None:
            return cached
        try:
            # The whole lookup, connect to last byte, within the timeout (httpx's own
            # timeouts are per phase: a slow drip of bytes would outlast them).
            check = await asyncio.wait_for(self.lookup(address), self.config.timeout)
        except (
            httpx.HTTPError,
            asyncio.TimeoutError,
            ProviderUnavailable,
            # An answer not shaped as documented: unchecked, never a 500 for the person.
            ValueError,
            TypeError,
            KeyError,
            AttributeError,
        ) as exc:
            logger.warning(
                "address provider %s gave no answer (%s): the address is unchecked",
                self.name,
                _reason(exc),
            )
            lasting = isinstance(exc, ProviderUnavailable) and exc.lasting
            unchecked = self._unchecked(address, lasting=lasting)
            ttl = self.config.cache_ttl if lasting else self.config.unchecked_ttl
            self._remember(key, unchecked, ttl)
            return unchecked
        if check.suggestion and same_address(check.suggestion, address):
            # The person accepted the suggestion: it is the provider's own version.
            check = AddressCheck.valid(check.suggestion)
        self._remember(key, check, self.config.cache_ttl)
        return check

    async def lookup(self, address: str) -> AddressCheck:
        raise NotImplementedError

    def region_of(self, address: str) -> str | None:
        return country_of(address) or self.config.region

    def _unchecked(self, address: str, *, lasting: bool = False) -> AddressCheck:
        if self.config.on_unavailable == "accept":
            return AddressCheck(ok=True, normalized=_tidy(address), unchecked=True)
        message = CANNOT_CHECK_MESSAGE if lasting else UNAVAILABLE_MESSAGE
        return AddressCheck(ok=False, message=message, unchecked=True)

    def _cached(self, key: str) -> AddressCheck | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        expires_at, check = entry
        if time.monotonic() >= expires_at:
            del self._cache[key]
            return None
        self._cache.move_to_end(key)
        return check

    def _remember(self, key: str, check: AddressCheck, ttl: float) -> None:
        if self.config.cache_size <= 0 or ttl <= 0:
            return
        self._cache[key] = (time.monotonic() + ttl, check)
        self._cache.move_to_end(key)
        while len(self._cache) > self.config.cache_size:
            self._cache.popitem(last=False)

    async def _get_json(self, url: str, params: Mapping[str, str]) -> Any:
        return _json(await self._client.get(url, params=params))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError | httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.HTTPError):
        return f"{type(exc).__name__}"  # never the URL: it holds the address
    if isinstance(exc, ProviderUnavailable):
        return str(exc)
    return f"an answer not shaped as documented: {type(exc).__name__}"


def _json(response: httpx.Response) -> Any:
    if response.status_code in (401, 402, 403):
        logger.error(
            "address provider refused the credentials or the account (HTTP %s): check "
            "the [address] keys and the provider's billing",
            response.status_code,
        )
    if not 200 <= response.status_code < 300:
        lasting = response.status_code in (400, 422)
        raise ProviderUnavailable(f"HTTP {response.status_code}", lasting=lasting)
    try:
        return response.json()
    except ValueError:
        raise ProviderUnavailable("the body is not JSON") from None


# -- Google Address Validation API -----------------------------------------------------
class GoogleAddressValidator(ProviderAddressValidator):
    """``POST /v1:validateAddress`` with the address as typed (``addressLines``, one per
    line; ``regionCode`` when the address names its country or ``[address] region`` is
    set, else Google infers it). The key travels in ``X-Goog-Api-Key``, never the URL.

    Read as Google's "Build your validation logic" says: ``verdict.possibleNextAction``
    FIX → not found, CONFIRM_ADD_SUBPREMISES → not found (a unit is missing), CONFIRM →
    corrected (``address.formattedAddress`` offered), ACCEPT → valid (the formatted
    address stored). Without ``possibleNextAction`` (older answers) the same is derived
    from the verdict's flags."""

    name = "google"

    async def lookup(self, address: str) -> AddressCheck:
        base = (self.config.api_base or GOOGLE_API_BASE).rstrip("/")
        lines = [" ".join(line.split()) for line in address.splitlines() if line.strip()]
        body: dict[str, Any] = {"address": {"addressLines": lines}}
        region = self.region_of(address)
        if region:
            body["address"]["regionCode"] = region
        response = await self._client.post(
            f"{base}/v1:validateAddress",
            json=body,
            headers={"X-Goog-Api-Key": self.config.api_key or ""},
        )
        data = _json(response)
        if not isinstance(data, dict) or not isinstance(data.get("result"), dict):
            raise ProviderUnavailable("no result in the answer")
        result = data["result"]
        verdict = result.get("verdict") or {}
        formatted = str((result.get("address") or {}).get("formattedAddress") or "")
        action = verdict.get("possibleNextAction") or _google_action(verdict)
        if action == "CONFIRM_ADD_SUBPREMISES":
            return AddressCheck.not_found(NEEDS_UNIT_MESSAGE)
        if action == "FIX" or not formatted:
            return AddressCheck.not_found()
        if action == "CONFIRM":
            return AddressCheck.corrected(formatted)
        return AddressCheck.valid(formatted)


def _google_action(verdict: Mapping[str, Any]) -> str:
    granular = verdict.get("validationGranularity") in ("PREMISE", "SUB_PREMISE")
    if not verdict.get("addressComplete") or not granular:
        return "FIX"
    if verdict.get("hasUnconfirmedComponents"):
        return "FIX"
    if verdict.get("hasReplacedComponents") or verdict.get("hasSpellCorrectedComponents"):
        return "CONFIRM"
    return "ACCEPT"  # inferred components alone (a ZIP+4, the country) need no question


# -- Smarty ----------------------------------------------------------------------------
# US Street footnotes that mean the address was changed, not only standardized
# (N# "fixed abbreviations" is standardizing): ZIP corrected, city or state spelling,
# a component changed, street spelling, a better address, ZIPMOVE, cardinal rule.
_SMARTY_CHANGES = frozenset({"A#", "B#", "K#", "L#", "M#", "P#", "U#", "Z#"})
_SMARTY_INTERNATIONAL_CHANGES = ("SmallChange", "LargeChange", "Added")
_SMARTY_PREMISE = ("Premise", "DeliveryPoint")


class SmartyAddressValidator(ProviderAddressValidator):
    """The US Street API (``GET /street-address``, freeform ``street``, strict matching:
    only deliverable addresses come back) for the US, the International Street API
    (``GET /verify``, ``freeform`` and ``country``) elsewhere. The country: the one the
    address names, else ``[address] region``, else the US. The secret key pair goes as
    HTTP Basic credentials, as Smarty's own SDK sends it (``BasicAuthCredentials``), not
    in the query: a URL ends up in logs."""

    name = "smarty"

    async def lookup(self, address: str) -> AddressCheck:
        region = self.region_of(address) or "US"
        if region == "US":
            return await self._us(address)
        return await self._international(address, region)

    async def _get(self, url: str, params: Mapping[str, str]) -> Any:
        auth = (self.config.auth_id or "", self.config.auth_token or "")
        return _json(await self._client.get(url, params=params, auth=auth))

    async def _us(self, address: str) -> AddressCheck:
        parts = _parts(address)
        if len(parts) > 1 and country_of(address) == "US":
            parts = parts[:-1]  # "…, USA": the US API wants no country
        base = (self.config.api_base or SMARTY_US_BASE).rstrip("/")
        params = {"street": ", ".join(parts), "candidates": "1"}
        data = await self._get(f"{base}/street-address", params)
        if not isinstance(data, list):
            raise ProviderUnavailable("the answer is not a list of candidates")
        if not data:
            return AddressCheck.not_found()
        candidate = data[0]
        analysis = candidate.get("analysis") or {}
        if analysis.get("dpv_match_code") == "D":
            return AddressCheck.not_found(NEEDS_UNIT_MESSAGE)
        if analysis.get("dpv_match_code") not in ("Y", "S"):
            return AddressCheck.not_found()
        line = ", ".join(
            str(candidate.get(key) or "").strip()
            for key in ("delivery_line_1", "delivery_line_2", "last_line")
            if str(candidate.get(key) or "").strip()
        )
        footnotes = set(re.findall(r"[A-Z]{1,2}#", str(analysis.get("footnotes") or "")))
        if footnotes & _SMARTY_CHANGES:
            return AddressCheck.corrected(line)
        return AddressCheck.valid(line)

    async def _international(self, address: str, region: str) -> AddressCheck:
        base = (self.config.api_base or SMARTY_INTERNATIONAL_BASE).rstrip("/")
        params = {"freeform": _tidy(address), "country": region}
        data = await self._get(f"{base}/verify", params)
        if not isinstance(data, list):
            raise ProviderUnavailable("the answer is not a list of candidates")
        if not data:
            return AddressCheck.not_found()
        candidate = data[0]
        analysis = candidate.get("analysis") or {}
        verified = analysis.get("verification_status") in ("Verified", "Partial")
        if not verified or analysis.get("address_precision") not in _SMARTY_PREMISE:
            return AddressCheck.not_found()
        lines = [
            str(candidate[key]).strip()
            for key in sorted(
                (k for k in candidate if re.fullmatch(r"address\d+", k)), key=lambda k: int(k[7:])
            )
            if str(candidate[key]).strip()
        ]
        if not lines:
            return AddressCheck.not_found()
        # The country named, so the address sent back is checked in the same country.
        line = ", ".join([*lines, country_name(region)])
        changes = str(analysis.get("changes") or "")
        if any(word in changes for word in _SMARTY_INTERNATIONAL_CHANGES):
            return AddressCheck.corrected(line)
        return AddressCheck.valid(line)


# -- Nominatim / Photon ----------------------------------------------------------------
_TOWN_KEYS = ("city", "town", "village", "hamlet", "municipality", "suburb")


class NominatimAddressValidator(ProviderAddressValidator):
    """A self-hosted Nominatim (``GET /search?q=…&format=jsonv2&addressdetails=1``) or
    Photon (a ``url`` ending in ``/api``: ``GET /api?q=…``). OpenStreetMap is a map, not
    a postal register: an address counts as found when the best match is a building
    with a house number. It is valid when what was typed holds that house number,
    street and postal code; otherwise the found address is offered as a correction.
    A valid address is stored as typed (OSM's names are not postal formatting)."""

    name = "nominatim"
    attribution = "Address data © OpenStreetMap contributors (ODbL)"

    def __init__(
        self, config: AddressConfig, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(config, transport=transport)
        url = (config.url or "").rstrip("/")
        self.photon = urlsplit(url).path.endswith("/api")
        self.search_url = url if self.photon else f"{url}/search"

    async def lookup(self, address: str) -> AddressCheck:
        region = self.region_of(address)
        query = _tidy(address)
        if self.photon:
            found = self._photon(await self._get_json(self.search_url, {"q": query, "limit": "1"}))
        else:
            params = {"q": query, "format": "jsonv2", "addressdetails": "1", "limit": "1"}
            if region:
                params["countrycodes"] = region.lower()
            found = self._nominatim(await self._get_json(self.search_url, params))
        if found is None or not found.get("house_number") or not found.get("road"):
            return AddressCheck.not_found()
        suggestion = _osm_line(found)
        if _osm_matches(found, address):
            return AddressCheck.valid(_tidy(address))
        return AddressCheck.corrected(suggestion)

    @staticmethod
    def _nominatim(data: Any) -> dict[str, str] | None:
        if not isinstance(data, list):
            raise ProviderUnavailable("the answer is not a list of places")
        if not data or not isinstance(data[0], dict):
            return None
        details = data[0].get("address") or {}
        town = next((details[k] for k in _TOWN_KEYS if details.get(k)), "")
        return {
            "house_number": str(details.get("house_number") or ""),
            "road": str(details.get("road") or ""),
            "town": str(town),
            "postcode": str(details.get("postcode") or ""),
            "country": str(details.get("country") or ""),
        }

    @staticmethod
    def _photon(data: Any) -> dict[str, str] | None:
        if not isinstance(data, dict) or not isinstance(data.get("features"), list):
            raise ProviderUnavailable("the answer is not a GeoJSON feature collection")
        if not data["features"]:
            return None
        properties = data["features"][0].get("properties") or {}
        town = next(
            (properties[k] for k in ("city", "town", "village", "district") if properties.get(k)),
            "",
        )
        return {
            "house_number": str(properties.get("housenumber") or ""),
            "road": str(properties.get("street") or ""),
            "town": str(town),
            "postcode": str(properties.get("postcode") or ""),
            "country": str(properties.get("country") or ""),
        }


def _words(text: str) -> str:
    return " " + " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split()) + " "


def _osm_matches(found: Mapping[str, str], typed: str) -> bool:
    words = _words(typed)
    wanted = [found["house_number"], found["road"]]
    if found.get("postcode"):
        wanted.append(found["postcode"])
    return all(_words(part) in words for part in wanted if part)


def _osm_line(found: Mapping[str, str]) -> str:
    town = " ".join(p for p in (found.get("town", ""), found.get("postcode", "")) if p)
    parts = [f"{found['house_number']} {found['road']}", town, found.get("country", "")]
    return ", ".join(p for p in parts if p)


def build_address_validator(
    config: AddressConfig, *, transport: httpx.AsyncBaseTransport | None = None
) -> AddressValidator:
    """The validator ``[address] provider`` names."""
    if config.provider == "google":
        return GoogleAddressValidator(config, transport=transport)
    if config.provider == "smarty":
        return SmartyAddressValidator(config, transport=transport)
    if config.provider == "nominatim":
        return NominatimAddressValidator(config, transport=transport)
    return StructuralAddressValidator()
