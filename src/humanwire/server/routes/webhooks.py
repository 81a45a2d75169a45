"""``POST /webhooks``, ``GET /webhooks``, ``DELETE /webhooks/{webhook_id}``."""

from __future__ import annotations

from pydantic import TypeAdapter

from humanwire.types import Webhook, WebhookCreateRequest

from ._api import ApiCall, Operation, PathParam, Payload

__all__ = ["operations"]


async def _create(call: ApiCall) -> Payload:
    return await call.engine.webhooks.create(call.account, call.body_as(WebhookCreateRequest))


async def _list(call: ApiCall) -> Payload:
    return await call.engine.webhooks.of(call.account)


async def _delete(call: ApiCall) -> Payload:
    await call.engine.webhooks.delete(call.account, call.path("webhook_id"))
    return None


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/webhooks",
            _create,
            operation_id="createWebhook",
            summary="Register a webhook",
            description="`secret` signs deliveries (`Humanwire-Signature`); it is shown "
            "in full only here.",
            tag="webhooks",
            status=201,
            body=TypeAdapter(WebhookCreateRequest),
            response=TypeAdapter(Webhook),
        ),
        Operation(
            "GET",
            "/webhooks",
            _list,
            operation_id="listWebhooks",
            summary="The account's webhooks",
            description="Header values are masked.",
            tag="webhooks",
            response=TypeAdapter(list[Webhook]),
        ),
        Operation(
            "DELETE",
            "/webhooks/{webhook_id}",
            _delete,
            operation_id="deleteWebhook",
            summary="Delete a webhook",
            tag="webhooks",
            status=204,
            errors=(404,),
            path_params=(PathParam("webhook_id", "The webhook's id."),),
        ),
    ]
