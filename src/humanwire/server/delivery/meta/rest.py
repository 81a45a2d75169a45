"""The Graph API's WhatsApp operations the service uses (``POST /{phone number id}/messages``
and a read of the phone number at start), on the carriers' shared request path
(``delivery.carrier_rest``: timeouts, per-account shares, retries of what was not done,
metrics). Here only what is Meta's: the bearer token, JSON bodies, and the error body
``{"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}``.

Why not pywa: its Graph API base is fixed in its constructor (a fake is reached only by
rewriting the transport's host), and it drops a webhook it cannot parse while answering
200; sending is one POST.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from humanwire.errors import parse_retry_after

from ...telemetry import Metrics
from ..carrier_rest import DEFAULT_TIMEOUT, CarrierREST, NumberedAPIError

__all__ = ["GraphAPIError", "GraphREST"]


class GraphAPIError(NumberedAPIError):
    """The Graph API refused or failed a request: ``code`` is Meta's error code (190 a bad
    token, 131026 undeliverable, 131047 outside the 24-hour window, …); ``status`` 0
    means no answer."""

    label: ClassVar[str] = "Meta"


class GraphREST(CarrierREST[GraphAPIError]):
    provider: ClassVar[str] = "meta"
    label: ClassVar[str] = "Meta"

    def __init__(
        self,
        access_token: str,
        phone_number_id: str,
        api_base: str,
        api_version: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.phone_number_id = phone_number_id
        super().__init__(
            base_url=f"{api_base.rstrip('/')}/{api_version}",
            headers={"Authorization": f"Bearer {access_token}"},
            timeout=timeout,
            transport=transport,
            metrics=metrics,
        )

    async def send_message(self, body: dict[str, Any], *, account: str = "") -> dict[str, Any]:
        return await self._call(
            "messages.create",
            "POST",
            f"/{self.phone_number_id}/messages",
            body,
            account=account,
            create=True,
        )

    async def phone_number(self) -> dict[str, Any]:
        """The business phone number (a cheap authenticated read: credentials at start)."""
        return await self._call(
            "phone_number.get", "GET", f"/{self.phone_number_id}", {"fields": "id"}
        )

    # -- what is Meta's ------------------------------------------------------------------
    async def _send(self, method: str, path: str, payload: Any) -> httpx.Response:
        if method == "GET":
            return await self._client.get(path, params=payload)
        return await self._client.post(path, json=payload)

    def _refusal(self, response: httpx.Response) -> GraphAPIError:
        code: int | None = None
        message = response.reason_phrase or "error"
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            raw = error.get("code")
            code = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
            message = str(error.get("message") or message)
        return GraphAPIError(
            response.status_code,
            code,
            message,
            parse_retry_after(response.headers.get("Retry-After")),
        )

    def _no_answer(self, message: str) -> GraphAPIError:
        return GraphAPIError(0, None, message)
