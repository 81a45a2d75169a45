"""The ``[approvals]`` section: which actions standing approvals may cover, and for how
long at most."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from ...config import ServiceConfig
from .checks import _about, _comma_separated, _Strict

__all__ = ["ApprovalsSettings"]

_DURATION = re.compile(r"([0-9]{1,7})(s|m|h|d)")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_MOST = 30 * 86_400


def _duration(value: Any) -> float:
    """``"8h"``, ``"90m"``, ``"3600s"``, ``"1d"`` or a number of seconds: over 0, at most
    30 days."""
    if isinstance(value, str):
        matched = _DURATION.fullmatch(value.strip())
        if matched is not None:
            value = int(matched[1]) * _UNIT[matched[2]]
        elif value.strip().isdigit():
            value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= _MOST:
        raise ValueError('must be a duration such as "8h", "90m" or "3600s", at most 30 days')
    return float(value)


def _action_name(value: str) -> str:
    if not 1 <= len(value) <= 200 or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("an action name is 1 to 200 printable characters")
    return value


class ApprovalsSettings(_Strict):
    """Standing approvals (docs/guides/approvals.md, "Standing approvals")."""

    grantable: Annotated[
        tuple[Annotated[str, AfterValidator(_action_name)], ...],
        BeforeValidator(_comma_separated),
        _about(
            "The action names a standing approval (`POST /approvals/grants`) may cover; any "
            "other is refused (400 on `actionName`). Empty (the default): none may be granted "
            "(a list, or comma-separated in the variable)."
        ),
    ] = ServiceConfig.approvals_grantable
    max_grant: Annotated[
        float,
        BeforeValidator(_duration),
        _about(
            'How far ahead a grant\'s `expiresAt` may be at most: `"8h"`, `"90m"`, `"3600s"` '
            "or seconds (at most 30 days)."
        ),
    ] = ServiceConfig.approvals_max_grant
