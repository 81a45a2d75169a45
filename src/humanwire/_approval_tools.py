"""The approval tools a model reads, framework-neutral: ``request_approval`` (ask people
to approve one action, with quorum and escalation) and ``consume_approval`` (claim the
approval right before the action runs). Argument schemas, descriptions and result texts;
the MCP server runs them (``humanwire.mcp.tools``).

The model performs the action itself, so the binding is explicit: the request carries the
action (name and arguments), its result gives the action's digest, and the action may run
only once ``consume_approval`` says so (the service refuses a second consume).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from ._tooling import optional_text
from .types.approvals import MAX_APPROVERS, Approval

__all__ = [
    "CONSUME_APPROVAL_DESCRIPTION",
    "CONSUME_TOOL",
    "REQUEST_TOOL",
    "ConsumeApprovalInput",
    "RequestApprovalInput",
    "approval_text",
    "consumed_text",
    "not_consumed_text",
    "request_approval_description",
]

REQUEST_TOOL = "request_approval"
CONSUME_TOOL = "consume_approval"

_APPROVER_TO = (
    "Who: a phone number in E.164 form (+12025550123) for sms, whatsapp and call; a Slack "
    "member id (U0123ABCD) for slack; an email address for email; a name for link."
)


class ApproverInput(BaseModel):
    channel: Literal["sms", "whatsapp", "slack", "email", "call", "link"] = Field(
        description="How the approver is asked (link: nothing is sent; the page's "
        "address comes back in the result for you to hand over)."
    )
    to: str = Field(min_length=1, max_length=254, description=_APPROVER_TO)


class EscalationInput(BaseModel):
    after: Annotated[float, Field(gt=0, le=60600)] = Field(
        description="Seconds from the start after which these approvers are asked too, "
        "if the request is still undecided."
    )
    approvers: list[ApproverInput] = Field(
        min_length=1, max_length=MAX_APPROVERS, description="The approvers of this tier."
    )


class RequestApprovalInput(BaseModel):
    title: str = Field(
        min_length=1,
        max_length=200,
        description="What is to be approved, in a few words, e.g. 'Refund order 1042'.",
    )
    description: str | None = optional_text(
        "Optional: why the action is needed and what it does, for the approvers."
    )
    action_name: str = Field(
        min_length=1,
        max_length=200,
        description="The name of the action the decision is about (the tool or operation "
        "you will run once approved), e.g. 'refund'.",
    )
    action_arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="The arguments you will run the action with, exactly; the approval "
        "holds for this action with these arguments only.",
    )
    approvers: list[ApproverInput] | None = Field(
        default=None,
        max_length=MAX_APPROVERS,
        description="Who is asked (1 to 20). Leave out to ask the configured human.",
    )
    quorum: int | None = Field(
        default=None,
        ge=1,
        le=MAX_APPROVERS,
        description="How many different people must approve (default 1).",
    )
    reject_quorum: int | None = Field(
        default=None,
        ge=1,
        le=MAX_APPROVERS,
        description="How many rejections reject the request (default: as soon as the "
        "quorum can no longer be reached).",
    )
    escalation: list[EscalationInput] | None = Field(
        default=None,
        max_length=MAX_APPROVERS,
        description="Optional tiers of approvers asked too when nobody decided in time, "
        "at increasing 'after'.",
    )
    remind_every: float | None = Field(
        default=None, ge=1, le=60000, description="Seconds between reminders to approvers."
    )
    wait_time: float | None = Field(
        default=None,
        gt=0,
        le=600,
        description="Seconds to wait for the decision (default: the server's wait).",
    )
    on_timeout: Literal["reject", "approve", "none"] | None = Field(
        default=None,
        description="What nobody deciding in time means: reject (default), approve, or "
        "none (stays undecided).",
    )


class ConsumeApprovalInput(BaseModel):
    interaction_id: str = Field(
        min_length=1, description="The interaction id request_approval returned."
    )
    action_digest: str = Field(
        min_length=1,
        description="The action digest request_approval returned (sha256:…).",
    )


_CONSUME_RULE = (
    f"Call {CONSUME_TOOL} right before performing the approved action, and do not perform "
    "it unless that tool says it may run now."
)


def request_approval_description(wait_time: float) -> str:
    return (
        "Ask one or more people to approve an action before you perform it (a payment, a "
        "deletion, a message on someone's behalf), over SMS, WhatsApp, Slack, email, a "
        "phone call or a link, with a quorum of approvals and escalation to more people "
        f"if nobody decides in time. Waits up to {wait_time:g} seconds for the decision "
        "and returns it with the interaction id and the action's digest. Being approved "
        f"does not run anything: {_CONSUME_RULE} An approval is used once."
    )


CONSUME_APPROVAL_DESCRIPTION = (
    f"Claim an approval from {REQUEST_TOOL} for its action, once. {_CONSUME_RULE} It says "
    "the action must not run when it was rejected, is still undecided, or was consumed "
    "before (the action already ran: do not run it again)."
)


def approval_text(approval: Approval) -> str:
    """What ``request_approval`` returns: the decision, the interaction id and the
    action's digest, and what to do next."""
    ids = f"interaction_id {approval.interaction_id}, action_digest {approval.action_digest}"
    said = f" {approval.response}" if approval.response else ""
    links = "".join(f"\nApproval page for {link.to}: {link.url}" for link in approval.links)
    if approval.decision == "approved":
        return (
            f"Approved.{said} ({ids}). Call {CONSUME_TOOL} with these right before "
            f"performing the action; perform it only if {CONSUME_TOOL} says it may run." + links
        )
    if approval.decision == "rejected":
        return f"Rejected: do not perform the action.{said} ({ids})." + links
    if approval.status == "ended":
        return f"No decision was made in time: do not perform the action.{said} ({ids})."
    return (
        f"No decision yet ({ids}); the approvers can still decide. Continue with other "
        f"work and call {CONSUME_TOOL} with these later, right before performing the "
        "action: it says whether the action may run. Do not request approval again." + links
    )


def consumed_text(interaction_id: str) -> str:
    return (
        f"The approval {interaction_id} is consumed for this action: the action may run "
        "now. Perform it once; this approval cannot be used again."
    )


def not_consumed_text(
    interaction_id: str, *, already: bool, reason: str, final: bool | None = None
) -> str:
    """Why the action must not run. ``final``: the approval was rejected or closed
    undecided (asking again changes nothing); ``False``: still pending; ``None``: not
    known (then the model may look again later)."""
    if already:
        return (
            f"Do not perform the action: the approval {interaction_id} was consumed "
            "before, so the action already ran (or is running)."
        )
    if final:
        return (
            f"Do not perform the action: the approval {interaction_id} is not approved "
            f"({reason}). That is final: do not call {CONSUME_TOOL} for it again."
        )
    if final is False:
        return (
            f"Do not perform the action yet: the approval {interaction_id} is not approved "
            f"(still pending). Continue with other work and call {CONSUME_TOOL} again later."
        )
    return (
        f"Do not perform the action: the approval {interaction_id} is not approved "
        f"({reason}). If it may still be decided, call {CONSUME_TOOL} again later."
    )
