"""Constants the end-to-end tests share (imported by name: ``from e2e_support import``)."""

from __future__ import annotations

from collections.abc import Callable

from humanwire.testing import RunningService

HUMAN = "+12025550100"
"""The inbox's default human, where the scripted human listens."""
SLACK_HUMAN = "U0HUMAN0001"
NO_RESPONSE = "Human did not respond. Continue where you left off."

StartService = Callable[..., RunningService]
"""The ``start_service`` fixture: ``start_service(db_name="own.db", **config_changes)``."""
