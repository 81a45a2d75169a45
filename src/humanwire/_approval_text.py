"""What a model reads when an action it called was not run for want of approval, worded
as in every adapter (LangChain's ``ApprovalRejected``, the OpenAI Agents SDK's
``rejection_message``, Pydantic AI's ``ToolDenied``). Framework-neutral."""

from __future__ import annotations

from .approval import ApprovalDecision

__all__ = ["not_approved_text", "not_requested_text"]


def not_approved_text(action: str, decision: ApprovalDecision) -> str:
    """The action did not run: rejected (with the human's comment), answered instead,
    or no decision in time (the timeout default said reject)."""
    if decision.timed_out:
        return (
            f"{action} was not run: no approval decision arrived in time "
            "(timeout; rejected by default)."
        )
    if decision.decision == "respond":
        return f"{action} was not run. The human answered instead: {decision.comment or ''}".strip()
    reason = f" Reason: {decision.comment}" if decision.comment else ""
    return f"{action} was not run: a human rejected it.{reason}"


def not_requested_text(action: str, error: Exception) -> str:
    """The action did not run because its approval could not be asked for (fails
    closed: an approval nobody could be asked for is no approval)."""
    return f"{action} was not run: its approval could not be requested (humanwire: {error})."
