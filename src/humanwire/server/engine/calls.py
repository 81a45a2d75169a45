"""Calls: ``POST /calls`` and the skill's ``/phone/*`` (an sms, or a call held up to its
limit and ended as ``timeout`` past it). A call is delivered like any send; its end comes
from the carrier (``delivery/call_turns``), not from a window."""

from __future__ import annotations

import functools
import os
from typing import Any

from pydantic_core import PydanticCustomError

from humanwire.types import (
    CallRequest,
    CallResponse,
    MessageResponse,
    PhoneCallRequest,
    PhoneSMSRequest,
    SMSMessageRequest,
    check_e164,
)

from ..errors import (
    CallTimeout,
    InvalidToNumber,
)
from ._common import Account
from .context import HELD_TO_THE_END, NewInteraction, SendContext
from .sends import Sends


class Calls(Sends):
    """Calls placed for the API and the skill."""

    async def place_call(
        self, account: Account, request: CallRequest, context: SendContext = HELD_TO_THE_END
    ) -> CallResponse:
        return await self._call(
            account,
            prompt=request.prompt,
            to=request.to,
            request=request.model_dump(mode="json", by_alias=True),
            wait=request.wait_for_call_end,
            limit=self.config.call_wait_limit,
            context=context,
        )

    async def _call(
        self,
        account: Account,
        *,
        prompt: str,
        to: str,
        request: dict[str, Any],
        wait: bool,
        limit: float,
        context: SendContext,
    ) -> CallResponse:
        sender = await self._phone_sender(account, None)
        await self._check_send(account, prompt, to)
        new = NewInteraction(kind="call", channel="call", to=to, from_addr=sender, request=request)
        record, resumed, hold = await self._open_interaction(
            account, new, holding=wait, context=context
        )
        await self._send_out(
            record, resumed, hold, functools.partial(self._deliver, record, prompt, hold=hold)
        )
        if hold is not None:
            ended = await self._hold(hold, limit=self._remaining(record, limit, resumed))
            if ended is not None and ended.result is not None:
                return self._call_response(ended)
        return CallResponse(**await self._as_now(record.id))

    async def phone_sms(
        self, account: Account, request: PhoneSMSRequest, context: SendContext = HELD_TO_THE_END
    ) -> MessageResponse:
        return await self.send_message(
            account,
            SMSMessageRequest(message=request.message, to=request.to, metadata=request.metadata),
            context,
        )

    async def phone_call(
        self, account: Account, request: PhoneCallRequest, context: SendContext = HELD_TO_THE_END
    ) -> CallResponse:
        """Holds up to ``config.phone_call_limit``; past it raises ``CallTimeout``
        (the call is not retried). A transferTo comes from the skill setting
        ``SERVICE_TRANSFER_NUMBER`` in the environment, when set."""
        transfer_to = os.environ.get("SERVICE_TRANSFER_NUMBER") or None
        if transfer_to is not None:
            try:
                check_e164(transfer_to)
            except PydanticCustomError:
                raise InvalidToNumber(field="transferTo") from None
        wire: dict[str, Any] = {"message": request.message, "to": request.to, "_phone": True}
        if request.metadata:
            wire["metadata"] = request.metadata
        if transfer_to is not None:
            wire["transferTo"] = transfer_to
        response = await self._call(
            account,
            prompt=request.message,
            to=request.to,
            request=wire,
            wait=True,
            limit=self.config.phone_call_limit,
            context=context,
        )
        if response.status == "ended" and response.outcome is not None:
            return response
        record = await self.store.get_interaction(response.interaction_id)
        if record is not None and record.status == "pending":
            await self._give_up_call(record)  # never retried: it is over for the skill
        raise CallTimeout("timeout")
