"""The sandbox API: the human's side of the embedded service (docs/design.md "Sandbox API").

Tests and demos use it to see what reached a recipient and to answer as the human.
Forms are filled through their ``form_url``, as a browser would.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from humanwire._http import Flow
from humanwire.errors import invalid_request
from humanwire.types import (
    CallResponse,
    SandboxCallOutcomeRequest,
    SandboxDelivery,
    SandboxInboundCallRequest,
    SandboxReplyRequest,
    format_seconds,
)

from ._base import ModeT, Resource, build, endpoint, path_id

__all__ = ["Sandbox"]


class Sandbox(Resource[ModeT]):
    @endpoint
    def deliveries(
        self,
        *,
        to: str | None = None,
        channel: str | None = None,
        interaction_id: str | None = None,
        after: str | None = None,
        wait: float | None = None,
    ) -> Flow[builtins.list[SandboxDelivery]]:
        """What was delivered, newest first, ``text`` as the recipient sees it. ``after``:
        only deliveries newer than that delivery id; ``wait`` (above 0, at most 60 s):
        hold the request until a matching delivery exists."""
        if wait is not None and not (
            isinstance(wait, (int, float)) and not isinstance(wait, bool) and 0 < wait <= 60
        ):
            raise invalid_request(
                f"wait must be above 0 and at most 60 seconds, got {wait!r}", field="wait"
            )
        return self._get(
            "/sandbox/messages",
            builtins.list[SandboxDelivery],
            params={
                "to": to,
                "channel": channel,
                "interactionId": interaction_id,
                "after": after,
                "wait": format_seconds(wait) if wait is not None else None,
            },
            wait=wait,
        )

    @endpoint
    def reply(
        self,
        *,
        channel: str,
        from_: str,
        to: str,
        body: str,
        interaction_id: str | None = None,
        media_urls: Sequence[str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[None]:
        """The human texts back: ``from_`` is the human, ``to`` the number or workspace
        that sent the message. For slack, ``interaction_id`` means "in that thread"."""
        request = build(
            SandboxReplyRequest,
            channel=channel,
            from_=from_,
            to=to,
            body=body,
            interaction_id=interaction_id,
            media_urls=builtins.list(media_urls) if media_urls is not None else None,
        )
        return self._post("/sandbox/replies", request, None, idempotency_key=idempotency_key)

    @endpoint
    def end_call(
        self,
        interaction_id: str,
        *,
        outcome: str,
        summary: str | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[CallResponse]:
        """The callee ends an outbound call (``completed``, ``no_answer``, ``transferred``)."""
        request = build(SandboxCallOutcomeRequest, outcome=outcome, summary=summary)
        return self._post(
            f"/sandbox/calls/{path_id(interaction_id, 'interactionId')}",
            request,
            CallResponse,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def inbound_call(
        self, *, from_: str, to: str, summary: str, idempotency_key: str | None = None
    ) -> Flow[None]:
        """Someone calls the account's reserved number ``to`` and leaves a message."""
        request = build(SandboxInboundCallRequest, from_=from_, to=to, summary=summary)
        return self._post("/sandbox/inbound-calls", request, None, idempotency_key=idempotency_key)
