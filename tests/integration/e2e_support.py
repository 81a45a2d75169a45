"""Constants the end-to-end tests share (imported by name: ``from e2e_support import``)."""

from __future__ import annotations

HUMAN = "+12025550100"
"""The inbox's default human, where the scripted human listens."""
SLACK_HUMAN = "U0HUMAN0001"
NO_RESPONSE = "Human did not respond. Continue where you left off."
