"""Shared setup of the Strands adapter tests: a clean recipient environment."""

from __future__ import annotations

import pytest

_ENV = (
    "HUMANWIRE_SMS_TO",
    "HUMANWIRE_WHATSAPP_TO",
    "HUMANWIRE_SLACK_TO",
    "HUMANWIRE_BASE_URL",
    "HUMANWIRE_API_KEY",
)


@pytest.fixture(autouse=True)
def _clean_recipient_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Recipients and service come from the fixtures, never from the developer's shell.
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
