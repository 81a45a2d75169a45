"""Resuming paused runs, written once for every adapter: from a webhook's delivery
(:func:`resume_from_webhook`), from the service once every call is answered or expired
(:func:`resume_answered`, :func:`resume_expired`).

What is an adapter's own it registers as a :class:`PauseResumer`: its
``metadata[humanwire_resume]``, how its saved pauses are found and what each waits for,
and the framework's resume step (run the pause on with the answers). Everything between
(reading the delivery, matching it to the call it answers, completing the other calls'
answers from the service) is here.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from humanwire.types import Event

from .answers import Answer, Awaited, answer_from_event, answers_from_service
from .delivery import Delivery, delivery_for

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

_Pause = TypeVar("_Pause")
_Outcome = TypeVar("_Outcome")


@dataclass(frozen=True)
class PauseResumer(Generic[_Pause, _Outcome]):
    """One adapter's paused runs, as the shared resume sees them.

    Where its pauses are saved by a key that its sends carry in their metadata, an
    adapter gives ``load``, ``keys`` and ``pause_key``; one whose pauses live elsewhere
    (ADK's session service) gives ``find`` and ``waiting`` instead."""

    framework: str
    """The adapter's ``metadata[humanwire_resume]``: the deliveries it resumes."""
    pending: Callable[[_Pause], Mapping[str, Awaited]]
    """What a pause waits for: its calls by the adapter's call key."""
    resume: Callable[[_Pause, dict[str, Answer]], Awaitable[_Outcome | None]]
    """The framework's resume step, given every call's answer: run the pause on; ``None``
    when it does not run (resumed already, an approval used before)."""
    client: Callable[[], Awaitable[AsyncHumanWire]]
    """The client that reads answers from the service (asked only when one is missing)."""
    load: Callable[[str], _Pause | None] | None = None
    """A saved pause by its key; ``None`` when none is saved."""
    keys: Callable[[], Iterable[str]] | None = None
    """Every saved pause's key."""
    pause_key: str | None = None
    """The metadata key of a send naming the saved pause it belongs to (for ``load``)."""
    find: Callable[[Delivery], Awaitable[_Pause | None]] | None = None
    """The saved pause a delivery names, when ``pause_key`` and ``load`` cannot say."""
    waiting: Callable[[], AsyncIterable[_Pause]] | None = None
    """Every pause saved, when ``keys`` and ``load`` cannot say."""
    call_key: str | None = None
    """The metadata key naming the call a send asks about: a delivery that names one must
    name the call its interaction answers (a send of an earlier pause does not resume)."""
    questions: bool = False
    """Whether questions' replies (``message.received``) answer this adapter's pauses."""
    unmarked: bool = False
    """Whether a send without ``metadata[humanwire_resume]`` counts as this adapter's."""

    async def found(self, delivery: Delivery) -> _Pause | None:
        """The saved pause ``delivery`` names, or ``None``."""
        if self.find is not None:
            return await self.find(delivery)
        if self.load is None or self.pause_key is None:
            raise TypeError(f"the {self.framework} pauses cannot be found: give find or load")
        key = delivery.metadata.get(self.pause_key)
        return self.load(key) if key else None

    async def saved(self) -> AsyncIterator[_Pause]:
        """Every pause saved."""
        if self.waiting is not None:
            async for pause in self.waiting():
                yield pause
            return
        if self.load is None or self.keys is None:
            raise TypeError(f"the {self.framework} pauses cannot be listed: give waiting or keys")
        for key in self.keys():
            loaded = self.load(key)
            if loaded is not None:
                yield loaded


async def resume_answered(
    resumer: PauseResumer[_Pause, _Outcome],
    pause: _Pause,
    known: Mapping[str, Answer] | None = None,
    *,
    timeout: float | None = 0,
) -> _Outcome | None:
    """Resume ``pause`` once every call it waits for is answered: ``known`` (answers by
    call key) completed from the service (waiting at most ``timeout`` seconds a call;
    ``0``: look once; ``None``: until it ends). ``None`` while any is still open (its own
    answer resumes the run), or when the resume step does not run it."""
    pending = resumer.pending(pause)
    given = dict(known or {})
    answers: dict[str, Answer] | None = given
    if any(key not in given for key in pending):
        answers = await answers_from_service(
            await resumer.client(), pending, given, timeout=timeout
        )
    if answers is None:
        return None
    return await resumer.resume(pause, answers)


async def resume_from_webhook(
    resumer: PauseResumer[_Pause, _Outcome],
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
) -> _Outcome | None:
    """Resume the pause a webhook delivery answers (verified with ``secret`` first).
    ``None`` for any other event, another adapter's send, a pause not saved (or saved at
    a later step: the delivery answers none of its calls), while another call of the
    pause is still open, and for a pause resumed already (a repeated delivery is
    harmless)."""
    delivery = delivery_for(
        resumer.framework,
        body,
        headers,
        secret=secret,
        questions=resumer.questions,
        unmarked=resumer.unmarked,
    )
    if delivery is None:
        return None  # another framework's pause, or not a pause at all
    pause = await resumer.found(delivery)
    if pause is None:
        return None
    answered = [
        (key, call)
        for key, call in resumer.pending(pause).items()
        if call.interaction_id == delivery.interaction_id
    ]
    if not answered:
        return None  # a send of an earlier pause of this run
    key, call = answered[0]
    if resumer.call_key is not None and delivery.metadata.get(resumer.call_key, key) != key:
        return None
    answer = answer_from_event(call.kind, delivery.event)
    if answer is None:
        return None
    return await resume_answered(resumer, pause, {key: answer})


async def resume_expired(resumer: PauseResumer[_Pause, _Outcome]) -> list[_Outcome]:
    """Resume every saved pause whose calls are all answered or closed (a webhook missed,
    or a window that closed unanswered: it sends none), looking once at each. Run it from
    a scheduler."""
    outcomes = []
    async for pause in resumer.saved():
        outcome = await resume_answered(resumer, pause)
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes
