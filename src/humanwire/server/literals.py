"""The wire's Literal values, checked where a plain string becomes one.

A stored row (``store/sql/rows``), another replica's notice, a provider's status: each is
a ``str`` until it is checked against the values of its Literal (``typing.get_args``), once,
where it is read; past that point the records and the engine carry the Literal itself.
"""

from __future__ import annotations

from typing import Any, Generic, TypeGuard, TypeVar, get_args

from ..types import (
    CallOutcome,
    DeliveryChannel,
    DeliveryKind,
    DeliveryStatus,
    EventType,
    InteractionChannel,
    InteractionKind,
    InteractionState,
    Medium,
)
from ..types.approvals import (
    ApprovalDecision,
    ApprovalOutcome,
    ApproverChannel,
)
from ..types.channels import ChannelType
from ..types.people import PersonChannel

__all__ = [
    "APPROVAL_DECISION",
    "APPROVAL_OUTCOME",
    "APPROVER_CHANNEL",
    "CALL_OUTCOME",
    "CHANNEL_TYPE",
    "DELIVERY_CHANNEL",
    "DELIVERY_KIND",
    "DELIVERY_STATUS",
    "EVENT_TYPE",
    "INTERACTION_CHANNEL",
    "INTERACTION_KIND",
    "INTERACTION_STATE",
    "MEDIUM",
    "PERSON_CHANNEL",
    "OneOf",
    "UnknownValue",
]

L = TypeVar("L", bound=str)


class UnknownValue(ValueError):
    """A value that is none of its Literal's (a row written by a newer version, a bug)."""


class OneOf(Generic[L]):
    """The values of one Literal: calling it returns ``value`` typed as that Literal, or
    raises ``UnknownValue``; ``holds`` narrows without raising. Made with the Literal it
    stands for (``OneOf[Medium](Medium, "medium")``), so its type and its values agree."""

    __slots__ = ("values", "what")

    def __init__(self, literal: Any, what: str) -> None:
        self.values: frozenset[str] = frozenset(get_args(literal))
        if not self.values or not all(isinstance(v, str) for v in self.values):
            raise TypeError(f"{literal!r} is not a Literal of strings")
        self.what = what

    def holds(self, value: object) -> TypeGuard[L]:
        return isinstance(value, str) and value in self.values

    def __call__(self, value: object) -> L:
        if not self.holds(value):
            known = ", ".join(sorted(self.values))
            raise UnknownValue(f"unknown {self.what} {value!r} (expected one of: {known})")
        return value

    def optional(self, value: object) -> L | None:
        """``value`` checked, None left None."""
        return None if value is None else self(value)


INTERACTION_KIND = OneOf[InteractionKind](InteractionKind, "interaction kind")
INTERACTION_CHANNEL = OneOf[InteractionChannel](InteractionChannel, "interaction channel")
INTERACTION_STATE = OneOf[InteractionState](InteractionState, "interaction state")
CALL_OUTCOME = OneOf[CallOutcome](CallOutcome, "call outcome")
DELIVERY_STATUS = OneOf[DeliveryStatus](DeliveryStatus, "delivery status")
DELIVERY_CHANNEL = OneOf[DeliveryChannel](DeliveryChannel, "delivery channel")
DELIVERY_KIND = OneOf[DeliveryKind](DeliveryKind, "delivery kind")
MEDIUM = OneOf[Medium](Medium, "medium")
CHANNEL_TYPE = OneOf[ChannelType](ChannelType, "channel card type")
EVENT_TYPE = OneOf[EventType](EventType, "event type")
APPROVER_CHANNEL = OneOf[ApproverChannel](ApproverChannel, "approver channel")
APPROVAL_DECISION = OneOf[ApprovalDecision](ApprovalDecision, "approval decision")
PERSON_CHANNEL = OneOf[PersonChannel](PersonChannel, "person's address channel")
APPROVAL_OUTCOME = OneOf[ApprovalOutcome](ApprovalOutcome, "approval outcome")
