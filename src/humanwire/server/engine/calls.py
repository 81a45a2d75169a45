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
from .accounts import Accounts
from .holding import Deadlines, Holding
from .holds import HELD_TO_THE_END, NewInteraction, SendContext
from .interactions import Delivery, Interactions
from .runtime import Runtime
from .sends import Senders, Sends


class Calls:
    """The calls role (``engine.calls``): calls placed for the API and the skill, as the
    sends' steps (``senders``, ``accounts``, ``interactions``, ``delivery``,
    ``holding``); the skill's sms is a message send (``sends``), a call past its limit
    is given up (``deadlines``)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        accounts: Accounts,
        senders: Senders,
        interactions: Interactions,
        delivery: Delivery,
        holding: Holding,
        deadlines: Deadlines,
        sends: Sends,
    ) -> None:
        self._runtime = runtime
        self._config = runtime.config
        self._accounts = accounts
        self._senders = senders
        self._interactions = interactions
        self._delivery = delivery
        self._holding = holding
        self._deadlines = deadlines
        self._sends = sends

    async def place_call(
        self, account: Account, request: CallRequest, context: SendContext = HELD_TO_THE_END
    ) -> CallResponse:
        return await self._call(
            account,
            prompt=request.prompt,
            to=request.to,
            request=request.model_dump(mode="json", by_alias=True),
            wait=request.wait_for_call_end,
            limit=self._config.call_wait_limit,
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
        sender = await self._senders.phone(account, None)
        await self._accounts.check_send(account, prompt, to)
        new = NewInteraction(kind="call", channel="call", to=to, from_addr=sender, request=request)
        record, resumed, hold = await self._interactions.open(
            account, new, holding=wait, context=context
        )
        await self._interactions.send_out(
            record,
            resumed,
            hold,
            functools.partial(self._delivery.deliver, record, prompt, hold=hold),
        )
        if hold is not None:
            ended = await self._holding.hold(
                hold, limit=self._interactions.remaining(record, limit, resumed)
            )
            if ended is not None and ended.result is not None:
                return self._interactions.call_response(ended)
        return CallResponse(**await self._interactions.fields_now(record.id))

    async def phone_sms(
        self, account: Account, request: PhoneSMSRequest, context: SendContext = HELD_TO_THE_END
    ) -> MessageResponse:
        return await self._sends.send_message(
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
            limit=self._config.phone_call_limit,
            context=context,
        )
        if response.status == "ended" and response.outcome is not None:
            return response
        record = await self._runtime.store.get_interaction(response.interaction_id)
        if record is not None and record.status == "pending":
            await self._deadlines.give_up_call(record)  # never retried: it is over for the skill
        raise CallTimeout("timeout")
