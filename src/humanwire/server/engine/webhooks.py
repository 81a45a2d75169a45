"""The webhooks role (``engine.webhooks``): webhook registrations, and what the inbox
shows of events and their deliveries (the deliveries themselves are the outbox's)."""

from __future__ import annotations

import secrets
import uuid

from humanwire.types import (
    Webhook,
    WebhookCreateRequest,
)

from ..background.outbox import check_webhook_url_async
from ..errors import (
    NotFound,
)
from ..store.records import InboundRecord, WebhookRecord
from ._common import Account
from .runtime import Runtime, _iso, _mask, _timestamp


class Webhooks:
    """The account's webhook registrations, and what the inbox shows of events and deliveries."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._store = runtime.store

    async def create(self, account: Account, request: WebhookCreateRequest) -> Webhook:
        """Refuses private and loopback targets unless ``config.local_mode``. The host is
        resolved off the event loop (``loop.getaddrinfo``, or the ``resolve`` hook in a
        thread), within ``resolve_timeout`` seconds; IP literals need no lookup."""
        await check_webhook_url_async(
            request.url,
            local_mode=self._runtime.config.local_mode,
            resolve=self._runtime.lookup.resolve,
            timeout=self._runtime.lookup.timeout,
        )
        record = WebhookRecord(
            id=str(uuid.uuid4()),
            account_id=account.id,
            url=request.url,
            event_types=list(request.event_types),
            headers=dict(request.headers or {}),
            secret="whsec_" + secrets.token_urlsafe(32),
            created_at=self._runtime.clock(),
        )
        await self._store.insert_webhook(record)
        self._runtime.notices.notify(account.id, "webhook", record.id)
        return self._webhook(record, reveal=True)

    @staticmethod
    def _webhook(record: WebhookRecord, *, reveal: bool) -> Webhook:
        return Webhook(
            id=record.id,
            url=record.url,
            event_types=record.event_types,
            headers=(
                record.headers
                if reveal
                else {name: _mask(value) for name, value in record.headers.items()}
            ),
            created_at=_timestamp(record.created_at),
            secret=record.secret if reveal else None,
        )

    async def of(self, account: Account) -> list[Webhook]:
        return [
            self._webhook(record, reveal=False)
            for record in await self._store.webhooks_of(account.id)
        ]

    async def delete(self, account: Account, webhook_id: str) -> None:
        if not await self._store.delete_webhook(account.id, webhook_id):
            raise NotFound(f"no webhook {webhook_id!r}", field="webhookId")
        await self._store.cancel_outbox_for_webhook(webhook_id, self._runtime.clock())
        self._runtime.notices.notify(account.id, "webhook", webhook_id)

    async def deliveries(self, account: Account) -> list[dict[str, object]]:
        """Webhook deliveries with status and attempts, newest first, for the inbox."""
        urls = {record.id: record.url for record in await self._store.webhooks_of(account.id)}
        log: list[dict[str, object]] = []
        for row in await self._store.list_outbox(account.id, 500):
            event = await self._store.get_event(row.event_id)
            log.append(
                {
                    "id": row.id,
                    "eventId": row.event_id,
                    "eventType": event.event_type if event else None,
                    "interactionId": event.interaction_id if event else None,
                    "webhookId": row.webhook_id,
                    "url": urls.get(row.webhook_id),
                    "status": row.status,
                    "attempts": row.attempts,
                    "lastError": row.last_error,
                    "lastStatusCode": row.last_status_code,
                    "nextAttemptAt": _iso(row.next_attempt_at) if row.status == "pending" else None,
                    "createdAt": _iso(row.created_at),
                    "deliveredAt": _iso(row.delivered_at),
                }
            )
        return log

    async def events(self, account: Account, limit: int = 200) -> list[dict[str, object]]:
        """Every event the account's webhooks would get (delivered or not, wanted by a
        webhook or not), newest first: ``{"id", "eventType", "payload", "interactionId",
        "createdAt"}``. Inbound texts and calls with no webhook are visible here."""
        return [
            {
                "id": record.id,
                "eventType": record.event_type,
                "payload": record.body.get("payload"),
                "interactionId": record.interaction_id,
                "createdAt": _iso(record.created_at),
            }
            for record in await self._store.list_events(account.id, limit)
        ]

    async def inbound(self, account: Account, limit: int = 200) -> list[InboundRecord]:
        """Every inbound text, matched to an interaction or not, newest first."""
        return await self._store.list_inbound(account.id, limit)
