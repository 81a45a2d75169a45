"""Voice calls: ``POST /calls``."""

from __future__ import annotations

from collections.abc import Mapping

from humanwire._constants import CALL_END_READ_TIMEOUT, WAIT_MARGIN
from humanwire._http import Flow
from humanwire.types import CallRequest, CallResponse

from ._base import ModeT, Resource, build, endpoint

__all__ = ["Calls"]


class Calls(Resource[ModeT]):
    @endpoint
    def create(
        self,
        *,
        to: str,
        prompt: str,
        transfer_to: str | None = None,
        language: str | None = None,
        voice: str | None = None,
        wait_for_call_end: bool = False,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[CallResponse]:
        """Place a call driven by ``prompt``. Without ``wait_for_call_end`` it returns at
        once with a ``pending`` interaction (see ``interactions.wait``); with it the
        request is held until the callee ends the call."""
        body = build(
            CallRequest,
            to=to,
            prompt=prompt,
            transfer_to=transfer_to,
            language=language,
            voice=voice,
            wait_for_call_end=wait_for_call_end,
            metadata=metadata,
        )
        return self._post(
            "/calls",
            body,
            CallResponse,
            # A call lasts until the callee ends it: allow the longest wait.
            wait=CALL_END_READ_TIMEOUT - WAIT_MARGIN if body.wait_for_call_end else None,
            idempotency_key=idempotency_key,
        )
