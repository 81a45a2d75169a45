"""Shared setup of the LlamaIndex adapter tests: a clean recipient environment."""

import pytest

from framework_support import ada

__all__ = ["ada"]

_ENV = (
    "HUMANWIRE_SMS_TO",
    "HUMANWIRE_WHATSAPP_TO",
    "HUMANWIRE_SLACK_TO",
    "HUMANWIRE_PERSON",
    "HUMANWIRE_BASE_URL",
    "HUMANWIRE_API_KEY",
)


@pytest.fixture(autouse=True)
def _clean_recipient_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Recipients must come from what each test sets, never from the machine's environment.
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
