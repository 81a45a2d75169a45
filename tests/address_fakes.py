"""Contract fakes of the address-validation providers: small HTTP servers on loopback
answering as each provider documents (request and answer shapes, auth, error bodies),
for four addresses: one valid, one the provider corrects, one it cannot find, and one it
answers too late (the timeout). The service is pointed at a fake with ``[address]
api_base`` (Google, Smarty) or ``url`` (Nominatim, Photon).

Shapes, from the providers' references:
- Google: ``POST /v1:validateAddress``, key in ``X-Goog-Api-Key`` (or ``?key=``), body
  ``{"address": {"addressLines": [...], "regionCode"?}}``; answer ``{"result": {"verdict":
  {...possibleNextAction}, "address": {"formattedAddress", ...}}, "responseId"}``; errors
  ``{"error": {"code", "message", "status"}}``.
- Smarty US Street: ``GET /street-address?street&candidates``, the secret key pair in
  the query (``auth-id``, ``auth-token``) or as HTTP Basic credentials; answer a
  JSON array of candidates (``delivery_line_1``, ``last_line``, ``components``,
  ``analysis.dpv_match_code``, ``analysis.footnotes``); ``[]`` when nothing matches; 401
  for bad keys. International: ``GET /verify?auth-id&auth-token&country&freeform``;
  candidates with ``address1…``, ``analysis.verification_status``,
  ``analysis.address_precision``, ``analysis.changes``.
- Nominatim: ``GET /search?q&format=jsonv2&addressdetails=1&limit``; a JSON array of
  places with ``address.{house_number, road, city, postcode, country, country_code}``.
  Photon: ``GET /api?q&limit``; a GeoJSON FeatureCollection, ``properties.{housenumber,
  street, city, postcode, country, countrycode}``.
"""

from __future__ import annotations

import asyncio
import base64
import re
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from humanwire.testing._fake_server import FakeServer

VALID = "1600 Amphitheatre Pkwy, Mountain View, CA 94043"
CORRECTED = "1600 Amphiteatre Pkwy, Mountain Veiw, CA 94043"
NOT_FOUND = "99999 Nowhere Lane, Atlantis, CA 00000"
SLOW = "1 Slow Lane, Lagtown, CA 90001"

GOOGLE_FORMATTED = "1600 Amphitheatre Parkway, Mountain View, CA 94043-1351, USA"
SMARTY_LINE = "1600 Amphitheatre Pkwy, Mountain View CA 94043-1351"
OSM_SUGGESTION = "1600 Amphitheatre Parkway, Mountain View 94043, United States"

UK_VALID = "10 Downing Street, London SW1A 2AA, United Kingdom"
UK_CORRECTED = "10 Downing Stret, London SW1A 2AB, United Kingdom"
UK_LINES = ["10 Downing Street", "London", "SW1A 2AA"]

API_KEY = "google-test-key"
AUTH_ID = "smarty-id"
AUTH_TOKEN = "smarty-token"


def key(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


@dataclass
class AddressFake:
    """What every fake shares: the requests it saw, how long the slow address takes."""

    delay: float = 5.0
    latency: float = 0.0
    """Seconds every answer takes (benchmarks: a provider's round trip)."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.requests.append(entry)

    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    async def slow(self, text: str) -> None:
        if self.latency:
            await asyncio.sleep(self.latency)
        if "slow lane" in key(text):
            await asyncio.sleep(self.delay)


# -- Google ----------------------------------------------------------------------------
def _google_error(code: int, status: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, "status": status}}, code)


class GoogleFake(AddressFake):
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1:validateAddress", self.validate, methods=["POST"])])

    async def validate(self, request: Request) -> Response:
        api_key = request.headers.get("x-goog-api-key") or request.query_params.get("key")
        try:
            body = await request.json()
        except ValueError:
            return _google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        self.seen({"api_key": api_key, "body": body})
        if api_key != API_KEY:
            return _google_error(
                403,
                "PERMISSION_DENIED",
                "API key not valid. Please pass a valid API key.",
            )
        address = body.get("address") if isinstance(body, dict) else None
        lines = address.get("addressLines") if isinstance(address, dict) else None
        unknown = set(body) - {"address", "previousResponseId", "enableUspsCass", "languageOptions"}
        if (
            unknown
            or not isinstance(lines, list)
            or not lines
            or not all(isinstance(line, str) for line in lines)
        ):
            return _google_error(400, "INVALID_ARGUMENT", "Invalid address.addressLines.")
        region = address.get("regionCode")
        if region is not None and region not in ("US", "GB", "DE", "FR"):
            return _google_error(400, "INVALID_ARGUMENT", "Unsupported region code.")
        typed = ", ".join(lines)
        await self.slow(typed)
        if "garbled" in key(typed):  # an answer not shaped as documented
            return JSONResponse({"result": {"verdict": ["ACCEPT"], "address": 5}})
        if key(typed) in (key(VALID), key(GOOGLE_FORMATTED)):
            verdict = {
                "inputGranularity": "PREMISE",
                "validationGranularity": "PREMISE",
                "geocodeGranularity": "PREMISE",
                "addressComplete": True,
                "hasInferredComponents": True,
                "possibleNextAction": "ACCEPT",
            }
            formatted = GOOGLE_FORMATTED
        elif key(typed) == key(CORRECTED):
            verdict = {
                "inputGranularity": "PREMISE",
                "validationGranularity": "PREMISE",
                "geocodeGranularity": "PREMISE",
                "addressComplete": True,
                "hasInferredComponents": True,
                "hasSpellCorrectedComponents": True,
                "possibleNextAction": "CONFIRM",
            }
            formatted = GOOGLE_FORMATTED
        else:
            verdict = {
                "inputGranularity": "PREMISE",
                "validationGranularity": "OTHER",
                "geocodeGranularity": "OTHER",
                "hasUnconfirmedComponents": True,
                "possibleNextAction": "FIX",
            }
            formatted = typed
        return JSONResponse(
            {
                "result": {
                    "verdict": verdict,
                    "address": {
                        "formattedAddress": formatted,
                        "postalAddress": {"regionCode": region or "US", "addressLines": lines},
                        "addressComponents": [],
                    },
                    "geocode": {},
                    "metadata": {},
                },
                "responseId": str(uuid.uuid4()),
            }
        )


# -- Smarty ----------------------------------------------------------------------------
class SmartyFake(AddressFake):
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/street-address", self.us_street, methods=["GET"]),
                Route("/verify", self.international, methods=["GET"]),
            ]
        )

    def _authorized(self, request: Request) -> bool:
        """Secret keys in the query (``auth-id``, ``auth-token``) or as HTTP Basic
        credentials (what the SDK's ``BasicAuthCredentials`` sends)."""
        params = request.query_params
        if params.get("auth-id") == AUTH_ID and params.get("auth-token") == AUTH_TOKEN:
            return True
        scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            return False
        return user == AUTH_ID and password == AUTH_TOKEN

    async def us_street(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.seen({"api": "us-street", "params": params, "headers": dict(request.headers)})
        if not self._authorized(request):
            return Response("Unauthorized: The credentials were provided incorrectly.", 401)
        street = params.get("street")
        if not street:
            return Response("Bad Request (Malformed Payload): a street is required", 400)
        await self.slow(street)
        if key(street) in (key(VALID), key(SMARTY_LINE)):
            footnotes = "N#"
        elif key(street) == key(CORRECTED):
            footnotes = "B#M#"
        else:
            return JSONResponse([])
        return JSONResponse(
            [
                {
                    "input_index": 0,
                    "candidate_index": 0,
                    "delivery_line_1": "1600 Amphitheatre Pkwy",
                    "last_line": "Mountain View CA 94043-1351",
                    "delivery_point_barcode": "940431351000",
                    "components": {
                        "primary_number": "1600",
                        "street_name": "Amphitheatre",
                        "street_suffix": "Pkwy",
                        "city_name": "Mountain View",
                        "state_abbreviation": "CA",
                        "zipcode": "94043",
                        "plus4_code": "1351",
                    },
                    "metadata": {"record_type": "S", "zip_type": "Standard"},
                    "analysis": {
                        "dpv_match_code": "Y",
                        "dpv_footnotes": "AABB",
                        "dpv_cmra": "N",
                        "dpv_vacant": "N",
                        "active": "Y",
                        "footnotes": footnotes,
                    },
                }
            ]
        )

    async def international(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.seen({"api": "international", "params": params})
        if not self._authorized(request):
            return Response("Unauthorized: The credentials were provided incorrectly.", 401)
        freeform, country = params.get("freeform"), params.get("country")
        if not freeform or not country:
            return Response("Bad Request: country and freeform are required", 400)
        await self.slow(freeform)
        if key(freeform) in (key(UK_VALID), key(", ".join([*UK_LINES, "United Kingdom"]))):
            changes = {"components": {"thoroughfare": "Verified-NoChange"}}
        elif key(freeform) == key(UK_CORRECTED):
            changes = {
                "components": {
                    "thoroughfare": "Verified-SmallChange",
                    "postal_code": "Verified-LargeChange",
                }
            }
        else:
            return JSONResponse(
                [
                    {
                        "address1": freeform,
                        "analysis": {
                            "verification_status": "None",
                            "address_precision": "None",
                            "max_address_precision": "DeliveryPoint",
                        },
                    }
                ]
            )
        candidate: dict[str, Any] = {
            "organization": "",
            "address1": UK_LINES[0],
            "address2": UK_LINES[1],
            "address3": UK_LINES[2],
            "components": {
                "country_iso_3": "GBR",
                "locality": "London",
                "postal_code": "SW1A 2AA",
                "premise": "10",
                "thoroughfare": "Downing Street",
            },
            "analysis": {
                "verification_status": "Verified",
                "address_precision": "Premise",
                "max_address_precision": "DeliveryPoint",
                "changes": changes,
            },
        }
        return JSONResponse([candidate])


# -- Nominatim and Photon --------------------------------------------------------------
_OSM_PLACE = {
    "house_number": "1600",
    "road": "Amphitheatre Parkway",
    "city": "Mountain View",
    "state": "California",
    "postcode": "94043",
    "country": "United States",
    "country_code": "us",
}
OSM_VALID = "1600 Amphitheatre Parkway, Mountain View, CA 94043"


class NominatimFake(AddressFake):
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/search", self.search, methods=["GET"]),
                Route("/api", self.photon, methods=["GET"]),
            ]
        )

    def _place(self, q: str) -> dict[str, str] | None:
        if key(q) in (key(OSM_VALID), key(OSM_SUGGESTION), key(CORRECTED)):
            return _OSM_PLACE
        return None

    async def search(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.seen({"api": "nominatim", "params": params})
        if params.get("format") != "jsonv2" or params.get("addressdetails") != "1":
            return JSONResponse({"error": "this fake answers format=jsonv2&addressdetails=1"}, 400)
        q = params.get("q", "")
        await self.slow(q)
        place = self._place(q)
        if place is None:
            return JSONResponse([])
        return JSONResponse(
            [
                {
                    "place_id": 123456,
                    "licence": "Data © OpenStreetMap contributors, ODbL 1.0.",
                    "osm_type": "way",
                    "osm_id": 23733659,
                    "lat": "37.4224857",
                    "lon": "-122.0855846",
                    "category": "building",
                    "type": "yes",
                    "place_rank": 30,
                    "importance": 0.5,
                    "addresstype": "building",
                    "name": "",
                    "display_name": ", ".join(place.values()),
                    "address": place,
                    "boundingbox": ["37.42", "37.43", "-122.09", "-122.08"],
                }
            ]
        )

    async def photon(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.seen({"api": "photon", "params": params})
        q = params.get("q", "")
        await self.slow(q)
        place = self._place(q)
        features = []
        if place is not None:
            features.append(
                {
                    "type": "Feature",
                    "geometry": {"type": "Point", "coordinates": [-122.0855846, 37.4224857]},
                    "properties": {
                        "osm_type": "W",
                        "osm_id": 23733659,
                        "osm_key": "building",
                        "osm_value": "yes",
                        "type": "house",
                        "housenumber": place["house_number"],
                        "street": place["road"],
                        "city": place["city"],
                        "postcode": place["postcode"],
                        "state": place["state"],
                        "country": place["country"],
                        "countrycode": "US",
                    },
                }
            )
        return JSONResponse({"type": "FeatureCollection", "features": features})


class AddressFakeServer(FakeServer[Any]):
    label = "address provider fake"
