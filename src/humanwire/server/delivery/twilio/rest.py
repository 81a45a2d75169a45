"""Twilio's REST API (2010-04-01), the few operations the service uses, on the carriers'
shared request path (``delivery.carrier_rest``: timeouts, per-account shares, retries of
what was not done, metrics). Here only what is Twilio's: HTTP Basic with the account's
credentials, form bodies (repeated keys for ``StatusCallbackEvent``), and the error body
``{"code", "message"}``.

Why not ``twilio.rest.Client``: its async path runs on aiohttp with a session of its own
per client, while the service already runs httpx. The ``twilio`` package still does what
only it should do here: validate signatures and build TwiML.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import urlencode

import httpx

from humanwire.errors import parse_retry_after

from ...telemetry import Metrics
from ..carrier_rest import DEFAULT_TIMEOUT, CarrierREST, NumberedAPIError

__all__ = ["TwilioAPIError", "TwilioREST"]

logger = logging.getLogger("humanwire.twilio")

API_VERSION = "2010-04-01"

Params = Sequence[tuple[str, str]] | Mapping[str, str]


class TwilioAPIError(NumberedAPIError):
    """Twilio refused or failed a request. ``code`` is Twilio's error code (21211, …)
    when it gave one; ``status`` 0 means no answer (connection error or timeout)."""

    label: ClassVar[str] = "Twilio"


class TwilioREST(CarrierREST[TwilioAPIError]):
    provider: ClassVar[str] = "twilio"
    label: ClassVar[str] = "Twilio"

    def __init__(
        self,
        account_sid: str,
        auth_token: str,
        api_base: str = "https://api.twilio.com",
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.account_sid = account_sid
        super().__init__(
            base_url=f"{api_base.rstrip('/')}/{API_VERSION}/Accounts/{account_sid}",
            auth=(account_sid, auth_token),
            headers={},
            timeout=timeout,
            transport=transport,
            metrics=metrics,
        )

    # -- operations ---------------------------------------------------------------
    async def create_message(self, params: Params, *, account: str = "") -> dict[str, Any]:
        return await self._call(
            "messages.create", "POST", "/Messages.json", params, account=account, create=True
        )

    async def create_call(self, params: Params, *, account: str = "") -> dict[str, Any]:
        return await self._call(
            "calls.create", "POST", "/Calls.json", params, account=account, create=True
        )

    async def update_call(self, sid: str, params: Params) -> dict[str, Any]:
        return await self._call("calls.update", "POST", f"/Calls/{sid}.json", params)

    async def incoming_numbers(self, phone_number: str) -> list[dict[str, Any]]:
        page = await self._call(
            "numbers.list", "GET", "/IncomingPhoneNumbers.json", {"PhoneNumber": phone_number}
        )
        numbers = page.get("incoming_phone_numbers") or []
        return [n for n in numbers if isinstance(n, dict)]

    async def incoming_numbers_page(self, size: int) -> list[dict[str, Any]]:
        page = await self._call(
            "numbers.list", "GET", "/IncomingPhoneNumbers.json", {"PageSize": str(size)}
        )
        numbers = page.get("incoming_phone_numbers") or []
        return [n for n in numbers if isinstance(n, dict)]

    async def update_number(self, sid: str, params: Params) -> dict[str, Any]:
        return await self._call(
            "numbers.update", "POST", f"/IncomingPhoneNumbers/{sid}.json", params
        )

    async def buy_number(self, params: Params) -> dict[str, Any]:
        return await self._call(
            "numbers.buy", "POST", "/IncomingPhoneNumbers.json", params, create=True
        )

    async def release_number(self, sid: str) -> None:
        await self._call("numbers.release", "DELETE", f"/IncomingPhoneNumbers/{sid}.json", None)

    async def available_local(self, country: str, params: Params) -> list[dict[str, Any]]:
        page = await self._call(
            "numbers.available", "GET", f"/AvailablePhoneNumbers/{country}/Local.json", params
        )
        numbers = page.get("available_phone_numbers") or []
        return [n for n in numbers if isinstance(n, dict)]

    # -- what is Twilio's -------------------------------------------------------------
    async def _send(self, method: str, path: str, payload: Params | None) -> httpx.Response:
        items = list(payload.items()) if isinstance(payload, Mapping) else list(payload or [])
        if method == "GET":
            return await self._client.get(path, params=urlencode(items))
        if method == "DELETE":
            return await self._client.delete(path)
        return await self._client.post(path, data=dict_or_list(items))

    def _refusal(self, response: httpx.Response) -> TwilioAPIError:
        """Twilio's ``{"code", "message"}``."""
        code: int | None = None
        message = response.reason_phrase or "error"
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict):
            raw = body.get("code")
            code = raw if isinstance(raw, int) else None
            message = str(body.get("message") or message)
        return TwilioAPIError(
            response.status_code,
            code,
            message,
            parse_retry_after(response.headers.get("Retry-After")),
        )

    def _no_answer(self, message: str) -> TwilioAPIError:
        return TwilioAPIError(0, None, message)


def dict_or_list(items: list[tuple[str, str]]) -> Any:
    """httpx takes repeated keys as a dict of lists (``StatusCallbackEvent``)."""
    data: dict[str, Any] = {}
    for key, value in items:
        if key in data:
            existing = data[key]
            data[key] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            data[key] = value
    return data
