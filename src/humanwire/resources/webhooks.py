"""Webhook registrations: ``/webhooks``. (Receiving deliveries: ``humanwire.webhooks``.)"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence

from humanwire._http import Flow
from humanwire.types import Webhook, WebhookCreateRequest

from ._base import ModeT, Resource, build, endpoint, path_id

__all__ = ["Webhooks"]


class Webhooks(Resource[ModeT]):
    @endpoint
    def create(
        self,
        *,
        url: str,
        event_types: Sequence[str],
        headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[Webhook]:
        """``POST /webhooks``. Keep the returned ``secret``: it verifies deliveries and is
        shown only here."""
        body = build(
            WebhookCreateRequest,
            url=url,
            event_types=builtins.list(event_types),
            headers=dict(headers) if headers is not None else None,
        )
        return self._post("/webhooks", body, Webhook, idempotency_key=idempotency_key)

    @endpoint
    def list(self) -> Flow[builtins.list[Webhook]]:
        """``GET /webhooks`` (header values masked, no secrets)."""
        return self._get("/webhooks", builtins.list[Webhook])

    @endpoint
    def delete(self, webhook_id: str) -> Flow[None]:
        return self._delete(f"/webhooks/{path_id(webhook_id, 'webhookId')}")
