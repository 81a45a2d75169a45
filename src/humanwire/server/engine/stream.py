"""Outcome events are the events role's (``events``, ``engine.events``). What is left
here keeps the parts still built on it working until they are role objects."""

from __future__ import annotations

from .events import wait_ended_event
from .state import EngineState

__all__ = ["OutcomeAppends", "wait_ended_event"]

# Until deadlines is a role object: ``Deadlines`` subclasses this name. The appends are
# ``engine.events``; ``EngineState`` delegates its old names to it.
OutcomeAppends = EngineState
