"""Fixtures of the Google ADK adapter tests: a clean recipient environment, and ADK's log
line about usage metadata (a scripted model has none) kept out of the output."""

from __future__ import annotations

import logging

import pytest

_ENV = (
    "HUMANWIRE_SMS_TO",
    "HUMANWIRE_WHATSAPP_TO",
    "HUMANWIRE_SLACK_TO",
    "HUMANWIRE_BASE_URL",
    "HUMANWIRE_API_KEY",
)

# "Skipping missing token usage metadata for agent ... and model ...", once per model call.
logging.getLogger("google_adk.google.adk.telemetry._metrics").setLevel(logging.ERROR)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recipients and service come from the fixtures, never from the developer's shell."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
