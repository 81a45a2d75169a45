"""Reserved numbers: ``GET /numbers/available``, ``POST /numbers/reserve``,
``GET /numbers``, ``DELETE /numbers/{id}``."""

from __future__ import annotations

import re

from pydantic import TypeAdapter

from humanwire.types import AvailableNumber, ReservedNumber, ReserveNumberRequest

from ..errors import InvalidRequest
from ._api import ApiCall, Operation, PathParam, Payload, QueryParam

__all__ = ["operations"]

COUNTRIES = ("US", "GB")
_AREA_CODE = re.compile(r"[0-9]{1,5}")


async def _available(call: ApiCall) -> Payload:
    country = call.query.get("country")
    if country is not None and country not in COUNTRIES:
        raise InvalidRequest("country must be US or GB", field="country")
    area_code = call.query.get("areaCode")
    if area_code is not None and not _AREA_CODE.fullmatch(area_code):
        raise InvalidRequest("areaCode must be 1 to 5 digits", field="areaCode")
    return await call.engine.numbers.find(country, area_code)


async def _reserve(call: ApiCall) -> Payload:
    request = call.body_as(ReserveNumberRequest)
    return await call.engine.numbers.reserve(call.account, request.phone_number)


async def _list(call: ApiCall) -> Payload:
    return await call.engine.numbers.of(call.account)


async def _delete(call: ApiCall) -> Payload:
    await call.engine.numbers.delete(call.account, call.path("number_id"))
    return None


def operations() -> list[Operation]:
    return [
        Operation(
            "GET",
            "/numbers/available",
            _available,
            operation_id="listAvailableNumbers",
            summary="Numbers that can be reserved",
            description="An empty list means nothing matches.",
            tag="numbers",
            response=TypeAdapter(list[AvailableNumber]),
            query=(
                QueryParam("country", "`US` or `GB`.", {"type": "string", "enum": list(COUNTRIES)}),
                QueryParam("areaCode", "Digits.", {"type": "string", "pattern": "^[0-9]{1,5}$"}),
            ),
        ),
        Operation(
            "POST",
            "/numbers/reserve",
            _reserve,
            operation_id="reserveNumber",
            summary="Reserve a number",
            description="One reserved number per account (409 otherwise); the number must "
            "come from the available list.",
            tag="numbers",
            status=201,
            body=TypeAdapter(ReserveNumberRequest),
            response=TypeAdapter(ReservedNumber),
            errors=(409,),
        ),
        Operation(
            "GET",
            "/numbers",
            _list,
            operation_id="listNumbers",
            summary="The account's reserved numbers",
            tag="numbers",
            response=TypeAdapter(list[ReservedNumber]),
        ),
        Operation(
            "DELETE",
            "/numbers/{number_id}",
            _delete,
            operation_id="deleteNumber",
            summary="Release a reserved number",
            tag="numbers",
            status=204,
            errors=(404,),
            path_params=(PathParam("number_id", "The reserved number's id."),),
        ),
    ]
