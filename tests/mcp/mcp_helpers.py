"""Helpers of the MCP tests (a module name no other test folder uses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PHONE = "+12025550100"
SLACK = "U0HUMAN0001"
OTHER_PHONE = "+442079460123"
EMAIL = "human@example.com"

Connect = Callable[..., Any]
"""The ``connect`` fixture: ``async with connect(**settings) as client``."""


def text(result: Any) -> str:
    """The text of a tool result (one text block)."""
    [block] = result.content
    return str(block.text)
