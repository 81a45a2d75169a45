"""Fixtures of the LangChain adapter tests: tools wired to the test service's account."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from langchain_core.tools import BaseTool

from framework_support import ada, service_environment
from humanwire import AsyncHumanWire, HumanWire

__all__ = ["ada", "service_environment"]

T = TypeVar("T", bound=BaseTool)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recipients and service come from the fixtures, never from the developer's shell."""
    for variable in (
        "HUMANWIRE_SMS_TO",
        "HUMANWIRE_WHATSAPP_TO",
        "HUMANWIRE_SLACK_TO",
        "HUMANWIRE_PERSON",
        "HUMANWIRE_BASE_URL",
        "HUMANWIRE_API_KEY",
    ):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def make(humanwire_client: HumanWire, async_humanwire_client: AsyncHumanWire) -> Callable[..., Any]:
    """``make(ToolClass, **options)``: a tool on this test's account, sync and async."""

    def build(cls: type[T], **options: Any) -> T:
        return cls(client=humanwire_client, async_client=async_humanwire_client, **options)

    return build
