"""The links role (``engine.links``): forms reached by link and reply links of channel
cards. No key: the unguessable token is the credential. A submission answers its form
(``holding``); a reply through a link is taken as if it came in the channel
(``inbound``)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable

from humanwire.types import (
    FormReceivedEvent,
    FormReceivedPayload,
)

from ..errors import (
    Conflict,
    FormInvalid,
    Gone,
    InvalidRequest,
    NotFound,
)
from ..literals import MEDIUM
from ..store.records import InteractionRecord
from ._common import FormState, FormView, ReplyLinkState, ReplyLinkView
from .holding import Holding
from .human import Inbound, InboundText
from .interactions import Interactions
from .runtime import Runtime, _event_dict, _metadata

FormOwner = Callable[[InteractionRecord], Awaitable[InteractionRecord | None]]
"""``LinkPages.form_owners``: the interaction whose form a form interaction shows."""


class LinkPages:
    """The links role (see the module docstring)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        interactions: Interactions,
        holding: Holding,
        inbound: Inbound,
    ) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._interactions = interactions
        self._holding = holding
        self._inbound = inbound
        self.form_owners: list[FormOwner] = []
        """Told of the interaction a form's token names: the one whose form it is (None:
        no one's). Registrations whose forms carry on another's (``fallbackAfter``'s
        onward forms, engine/fallback.py: the first interaction's)."""

    def _form_view(self, token: str, record: InteractionRecord) -> FormView:
        values: dict[str, str] | None = None
        if record.result is not None and record.result.get("eventType") == "form.received":
            values = dict(record.result["payload"]["values"])
        state: FormState
        if values is not None:
            state = "submitted"
        elif record.status == "ended" or time.time() >= (record.follow_up_deadline or 0.0):
            state = "expired"
        else:
            state = "open"
        return FormView(
            token=token,
            interaction_id=record.id,
            account_id=record.account_id,
            form=self._interactions.form_of(record),
            state=state,
            wait_deadline=record.wait_deadline,
            follow_up_deadline=record.follow_up_deadline or record.created_at,
            values=values,
        )

    async def get_form(self, token: str) -> FormView:
        """Raises ``NotFound`` for an unknown token. The view is of the interaction whose
        form it is (``form_owners``): submitting it answers that one."""
        record = await self._store.interaction_by_form_token(token) if token else None
        for owner in self.form_owners:
            if record is None:
                break
            record = await owner(record)
        if record is None:
            raise NotFound("no such form")
        return self._form_view(token, record)

    async def submit_form(self, token: str, values: dict[str, str]) -> FormView:
        """Validates with ``humanwire.server.forms.validate.validate_off_loop``; raises
        ``FormInvalid`` (an ``InvalidRequest``; field = the first failing field id,
        ``errors`` all of them) on a failed rule, ``Conflict`` when already submitted,
        ``Gone`` once the follow-up window has closed. Inside waitTime the held request
        gets the values; after it, a ``form.received`` event goes to the webhooks."""
        from ..forms.validate import validate_off_loop

        view = await self.get_form(token)
        if view.state == "submitted":
            raise Conflict("this form was already submitted")
        if view.state == "expired":
            raise Gone("this form has expired")
        normalized, errors = await validate_off_loop(view.form, values, self._runtime.addresses)
        if errors:
            raise FormInvalid(errors)
        record = await self._store.get_interaction(view.interaction_id)
        assert record is not None
        event = _event_dict(
            FormReceivedEvent(
                payload=FormReceivedPayload(
                    interaction_id=record.id, values=normalized, metadata=_metadata(record)
                )
            )
        )
        if await self._holding.answer(record, event) is None:
            # Ended between the check and now (its window closed): same answers as above.
            return await self._raise_closed_form(token)
        return dataclasses.replace(view, state="submitted", values=normalized)

    async def _raise_closed_form(self, token: str) -> FormView:
        view = await self.get_form(token)
        if view.state == "submitted":
            raise Conflict("this form was already submitted")
        raise Gone("this form has expired")

    # -- reply links of channel cards ---------------------------------------------
    async def get_reply_link(self, token: str) -> ReplyLinkView:
        """What the reply page shows; ``NotFound`` for an unknown token."""
        record = await self._store.interaction_by_reply_token(token) if token else None
        if (
            record is not None
            and record.channel == "email"
            and not record.request.get("_replyLink")
        ):
            record = None  # an email's reply-address token, not a reply link of a card
        if record is None:
            raise NotFound("no such reply link")
        reply: str | None = None
        if record.result is not None and record.result.get("eventType") == "message.received":
            reply = str(record.result["payload"]["body"])
        state: ReplyLinkState = (
            "answered" if reply is not None else "open" if record.status == "pending" else "expired"
        )
        return ReplyLinkView(
            token=token,
            interaction_id=record.id,
            account_id=record.account_id,
            channel=record.channel,
            to=record.to_addr,
            from_=record.from_addr,
            text=str(record.request.get("_text", "")),
            state=state,
            wait_deadline=record.wait_deadline,
            close_deadline=record.close_deadline,
            reply=reply,
        )

    async def reply_by_link(self, token: str, body: str) -> None:
        """The recipient answers through the card's reply link: as if they had replied
        in the channel. ``Conflict`` once answered, ``Gone`` once the windows closed."""
        view = await self.get_reply_link(token)
        if view.state == "answered":
            raise Conflict("this message was already answered")
        if view.state == "expired":
            raise Gone("this reply link has expired")
        if not body.strip():
            raise InvalidRequest("the reply must not be empty", field="body")
        record = await self._store.get_interaction(view.interaction_id)
        assert record is not None
        await self._inbound.take_text(
            account_id=record.account_id,
            text=InboundText(
                channel=MEDIUM(record.channel),  # a card's message: never a call
                from_addr=record.to_addr,
                to_addr=record.from_addr,
                body=body,
            ),
            record=record,
        )
