"""Telnyx's REST API (v2), the few operations the service uses, on the carriers' shared
request path (``delivery.carrier_rest``: timeouts, per-account shares, retries of what
was not done, metrics). Here only what is Telnyx's: a bearer API key, JSON bodies (the
query for GET and DELETE), and the error body ``{"errors": [{"code", "detail",
"source": {"pointer"}}]}``.

Why not ``telnyx.AsyncTelnyx``: as for Twilio, the service already runs httpx; the
contract fake (``humanwire.testing.telnyx``) checks every request against the ``telnyx``
package's published request types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import quote

import httpx

from humanwire.errors import parse_retry_after

from ...telemetry import Metrics
from ..carrier_rest import DEFAULT_TIMEOUT, CarrierAPIError, CarrierREST

__all__ = ["TelnyxAPIError", "TelnyxREST"]


@dataclass
class TelnyxAPIError(CarrierAPIError):
    """Telnyx refused or failed a request: ``code`` is the first of Telnyx's
    ``errors[].code`` (``"40310"``…), ``pointer`` its ``source.pointer`` (``/to``);
    ``status`` 0 means no answer."""

    status: int
    code: str | None
    message: str
    retry_after: float | None = None
    pointer: str | None = None

    def __str__(self) -> str:
        code = f" {self.code}" if self.code else ""
        return f"Telnyx{code}: {self.message} (HTTP {self.status})"


class TelnyxREST(CarrierREST[TelnyxAPIError]):
    provider: ClassVar[str] = "telnyx"
    label: ClassVar[str] = "Telnyx"

    def __init__(
        self,
        api_key: str,
        api_base: str = "https://api.telnyx.com/v2",
        *,
        account_sid: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.account_sid = account_sid or ""
        super().__init__(
            base_url=api_base.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout,
            transport=transport,
            metrics=metrics,
        )

    # -- operations -----------------------------------------------------------------
    async def send_message(self, body: Mapping[str, Any], *, account: str = "") -> dict[str, Any]:
        answer = await self._call(
            "messages.send", "POST", "/messages", body, account=account, create=True
        )
        return _data(answer)

    async def phone_numbers(self, phone_number: str | None = None) -> list[dict[str, Any]]:
        query = {"filter[phone_number]": phone_number} if phone_number else {"page[size]": "1"}
        answer = await self._call("numbers.list", "GET", "/phone_numbers", query)
        return [n for n in answer.get("data") or [] if isinstance(n, dict)]

    async def update_number(self, number_id: str, body: Mapping[str, Any]) -> None:
        await self._call("numbers.update", "PATCH", f"/phone_numbers/{quote(number_id)}", body)

    async def update_number_messaging(self, number_id: str, profile_id: str) -> None:
        await self._call(
            "numbers.messaging",
            "PATCH",
            f"/phone_numbers/{quote(number_id)}/messaging",
            {"messaging_profile_id": profile_id},
        )

    async def release_number(self, number_id: str) -> None:
        await self._call("numbers.release", "DELETE", f"/phone_numbers/{quote(number_id)}", None)

    async def available(self, query: Mapping[str, str]) -> list[dict[str, Any]]:
        answer = await self._call("numbers.available", "GET", "/available_phone_numbers", query)
        return [n for n in answer.get("data") or [] if isinstance(n, dict)]

    async def order_number(self, body: Mapping[str, Any]) -> dict[str, Any]:
        answer = await self._call("numbers.buy", "POST", "/number_orders", body, create=True)
        return _data(answer)

    async def create_call(self, body: Mapping[str, Any], *, account: str = "") -> dict[str, Any]:
        path = f"/texml/Accounts/{quote(self.account_sid)}/Calls"
        return await self._call("calls.create", "POST", path, body, account=account, create=True)

    async def update_call(self, call_sid: str, body: Mapping[str, Any]) -> dict[str, Any]:
        path = f"/texml/Accounts/{quote(self.account_sid)}/Calls/{quote(call_sid)}"
        return await self._call("calls.update", "POST", path, body)

    # -- what is Telnyx's -------------------------------------------------------------
    async def _send(
        self, method: str, path: str, payload: Mapping[str, Any] | None
    ) -> httpx.Response:
        if method in ("GET", "DELETE"):
            return await self._client.request(method, path, params=dict(payload or {}))
        return await self._client.request(method, path, json=dict(payload or {}))

    def _refusal(self, response: httpx.Response) -> TelnyxAPIError:
        return _error(response)

    def _no_answer(self, message: str) -> TelnyxAPIError:
        return TelnyxAPIError(0, None, message)


def _data(answer: dict[str, Any]) -> dict[str, Any]:
    data = answer.get("data")
    return data if isinstance(data, dict) else {}


def _error(response: httpx.Response) -> TelnyxAPIError:
    """Telnyx's ``{"errors": [{"code", "title", "detail", "source": {"pointer"}}]}``."""
    code: str | None = None
    pointer: str | None = None
    message = response.reason_phrase or "error"
    try:
        body = response.json()
    except ValueError:
        body = None
    errors = body.get("errors") if isinstance(body, dict) else None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        first = errors[0]
        code = str(first["code"]) if first.get("code") is not None else None
        message = str(first.get("detail") or first.get("title") or message)
        source = first.get("source")
        if isinstance(source, dict) and isinstance(source.get("pointer"), str):
            pointer = source["pointer"]
    return TelnyxAPIError(
        response.status_code,
        code,
        message,
        parse_retry_after(response.headers.get("Retry-After")),
        pointer,
    )
