"""A message or form to a person that moves to their next confirmed address when nobody
answered (``fallbackAfter``, docs/people.md): a registration, not a branch of the sends.

- ``sends.opened``: a message or form interaction whose request has ``fallbackAfter``
  arms step 1 of the schedule (``message.fallback``, keyed ``<interaction id>:<n>``) at
  its creation plus ``fallbackAfter``; a retry re-attached arms the same step at the same
  time.
- The step (at least once, like the approvals' reminders): the interaction still
  pending, the ``n``-th next confirmed address after the one first used (on the
  endpoint's channel; any message channel for ``/messages/person``) gets the message as
  an onward message of its own (its stored request marks ``_fallbackOf``), listening
  until the first one's last window closes: the deadline does not move. A form's onward
  one is a form interaction of its own carrying the first one's link
  (``sends.send_form_onward``). One audit entry ``message.fallback`` per move, written
  right after the provider took it; a step run again finds it and sends nothing. Then
  step ``n + 1`` is armed while the window lasts.
- ``links.form_owners``: an onward form's own token (what a channel rendering the form
  natively submits by: a Discord modal, a Teams card) is the first one's form, so a
  submission from any address asked answers the first interaction.
- ``inbound.matchers``: a text matched to an onward message (its key) is about the first
  interaction: it answers that one, while it is pending, and the onward message ends
  quietly with it (no event of its own: the caller never made it).
- ``deadlines.closers["message"]`` and ``["form"]``: an onward message or form whose
  window closes ends quietly too.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

from pydantic import ValidationError

from ..delivery.port import InboundText
from ..store.records import AuditDraft, InteractionRecord, StepRecord
from ._common import Account
from .holding import Deadlines
from .human import Inbound, TextMatcher
from .links import LinkPages
from .runtime import Runtime
from .sends import ANY_CHANNEL, Sends, form_request, message_requests

__all__ = ["FALLBACK_STEP", "ONWARD_KEY", "Fallbacks"]

logger = logging.getLogger(__name__)

FALLBACK_STEP: Final = "message.fallback"
"""The schedule's step, and the audit entry of each move."""
ONWARD_KEY = "_fallbackOf"
"""An onward message's stored request names the interaction it carries on."""
_COPIED = ("message", "subject")
"""What an onward message takes of the first one's request (its wait is the first's)."""
_NOT_COPIED = frozenset({"to", "person", "fallbackAfter", "metadata"})
"""What an onward form does not take of the first one's request: it takes the form, its
message, its sender; its windows are dropped by ``send_form_onward``."""


class Fallbacks:
    """The fallback role (``engine.fallbacks``; see the module docstring)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        sends: Sends,
        inbound: Inbound,
        deadlines: Deadlines,
        links: LinkPages,
    ) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._sends = sends
        self._deadlines = deadlines
        runtime.schedule.handlers[FALLBACK_STEP] = self._step
        sends.opened.append(self._arm)
        inbound.matchers.append(
            TextMatcher(self._to_first, unmatched=False, matched_key=ONWARD_KEY)
        )
        deadlines.closers["message"] = self._close
        deadlines.closers["form"] = self._close
        links.form_owners.append(self._form_owner)

    async def _arm(self, record: InteractionRecord) -> None:
        after = record.request.get("fallbackAfter")
        if after is None or record.status != "pending":
            return
        await self._runtime.schedule.arm(
            FALLBACK_STEP,
            f"{record.id}:1",
            record.created_at + float(after),
            account_id=record.account_id,
        )

    async def _step(self, step: StepRecord) -> None:
        interaction_id, _, number = step.key.rpartition(":")
        n = int(number)
        first = await self._store.get_interaction(interaction_id)
        if first is None or first.status != "pending":
            return  # answered, or its window closed: nothing moves
        close = first.close_deadline
        now = time.time()
        if close is None or close <= now:
            return
        moves = [
            e.entry
            for e in await self._store.audit_of(first.id)
            if e.entry.get("type") == FALLBACK_STEP
        ]
        if any((e.get("data") or {}).get("move") == n for e in moves):
            return  # moved already (a step runs at least once)
        account = await self._store.get_account(first.account_id)
        person_id = first.request.get("person")
        if account is None or account.suspended or not isinstance(person_id, str):
            return
        person = await self._store.get_person(account.id, person_id)
        if person is None:
            return
        # A form moves on its endpoint's channel; a message on it too, or on any message
        # channel for ``/messages/person``.
        any_channel = first.kind == "message" and first.request.get(ANY_CHANNEL)
        channels = message_requests() if any_channel else (first.channel,)
        confirmed = [
            (a.channel, a.to_addr)
            for a in person.addresses
            if a.confirmed_at is not None and a.channel in channels
        ]
        here = (first.channel, first.to_addr)
        start = confirmed.index(here) if here in confirmed else -1
        if start + n >= len(confirmed):
            return  # no next address: the first one goes on listening alone
        channel, to = confirmed[start + n]
        asking = Account(account.id, account.name, account.suspended)
        onward = await self._onward(asking, first, channel, to)
        if onward is None:
            return
        data: dict[str, Any] = {
            "move": n,
            "from": {"channel": first.channel, "to": first.to_addr},
            "interactionId": onward,
        }
        actor = {"person": person_id, "channel": channel, "to": to}
        await self._store.append_audit(
            account.id, [AuditDraft(time.time(), FALLBACK_STEP, first.id, actor, data)]
        )
        after = float(first.request["fallbackAfter"])
        due = step.due_at + after
        if due < close:
            await self._runtime.schedule.arm(
                FALLBACK_STEP, f"{first.id}:{n + 1}", due, account_id=account.id
            )

    async def _onward(
        self, account: Account, first: InteractionRecord, channel: str, to: str
    ) -> str | None:
        """The onward message (or form) of ``first`` to ``to`` on ``channel``, listening
        until ``first``'s last window closes; its id, None when it does not go there."""
        marks = {ONWARD_KEY: first.id}
        listening = (first.close_deadline or 0.0) - time.time()
        try:
            if first.kind == "form":
                kept = {
                    k: v
                    for k, v in first.request.items()
                    if not k.startswith("_") and k not in _NOT_COPIED
                }
                form = form_request(channel, {**kept, "to": to})
            else:
                wire = {k: first.request[k] for k in _COPIED if k in first.request}
                message = message_requests()[channel].model_validate({**wire, "to": to})
        except ValidationError:  # that channel's rules (a message too long for it)
            logger.warning(
                "fallback of %s: the %s does not go on %s", first.id, first.kind, channel
            )
            return None
        if first.kind == "form":
            assert first.form_token is not None
            return await self._sends.send_form_onward(
                account, form, form_token=first.form_token, marks=marks, listening=listening
            )
        return await self._sends.send_onward(account, message, marks=marks, listening=listening)

    async def _to_first(
        self, text: InboundText, account_id: str | None, record: InteractionRecord | None
    ) -> InteractionRecord | None:
        """The matcher: a text matched to an onward message is about the first one (and
        the onward message ends with it); the first one ended, it is nobody's reply."""
        assert record is not None  # offered only a matched text (``unmatched=False``)
        first_id = record.request.get(ONWARD_KEY)
        if not isinstance(first_id, str):
            return record
        await self._end_quietly(record)
        first = await self._store.get_interaction(first_id)
        if first is None or first.status != "pending" or first.account_id != record.account_id:
            return None
        return first

    async def _form_owner(self, record: InteractionRecord) -> InteractionRecord | None:
        """``links.form_owners``: an onward form's token (what its channel renders
        natively submits by) is the first one's form; any other form is its own."""
        first_id = record.request.get(ONWARD_KEY)
        if not isinstance(first_id, str):
            return record
        first = await self._store.get_interaction(first_id)
        if first is None or first.account_id != record.account_id or first.kind != "form":
            return None
        return first

    async def _close(self, record: InteractionRecord) -> bool:
        """``closers["message"]`` and ``closers["form"]``: an onward message's or form's
        window closed (the first one's closes with it): ended with no event of its own.
        Any other: the plain end."""
        if ONWARD_KEY not in record.request:
            return False
        await self._end_quietly(record)
        return True

    async def _end_quietly(self, record: InteractionRecord) -> None:
        self._deadlines.disarm(record.id)
        if record.status == "pending":
            await self._store.end_interaction(record.id, time.time())
