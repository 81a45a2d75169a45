"""How a durable drive ended, for every adapter with paused runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

_Result = TypeVar("_Result")
_Paused = TypeVar("_Paused")


@dataclass(frozen=True)
class PausedOutcome(Generic[_Result, _Paused]):
    """How a durable drive ended: finished with the framework's ``result``, or ``paused``
    again (the pause saved, its approvals and questions sent). An adapter's outcome adds
    what else its drive tells (a run id, a session's keys) as keyword-only fields."""

    result: _Result
    paused: _Paused | None = None

    @property
    def finished(self) -> bool:
        """Not paused: no pause, or (an adapter whose pause is its calls) none of them."""
        return not self.paused
