"""What a message looks like in Slack (Block Kit, through ``slack_sdk.models.blocks``).

- A text: one section with the text.
- A form: the text, then an "Open the form" link button.
- An approval form (``humanwire.approval``'s: a required ``decision`` select offering
  approve and reject, nothing else required): its title and what will run, then Approve
  and Reject buttons beside the form link (which still takes a comment or an edit).
- An approval request's message (``POST /approvals``, a ``slack`` approver): its text,
  then Approve and Reject buttons (their value names the request and the approver) beside
  a link to the approver's page (which takes a comment).
- Decided: the buttons give way to who decided and when (Slack's ``<!date>`` shows it in
  the reader's time zone).

Everything from the agent or a form is escaped for Slack's mrkdwn (``&``, ``<``, ``>``):
a message cannot ping ``<!channel>`` or fake a link.
"""

from __future__ import annotations

import time
from typing import Any

from humanwire.types import Form

__all__ = [
    "APPROVAL_APPROVE",
    "APPROVAL_REJECT",
    "APPROVE",
    "OPEN_FORM",
    "OPEN_QUEUE",
    "REJECT",
    "approval_choices",
    "approval_request_blocks",
    "approval_settled_blocks",
    "decided_blocks",
    "decided_line",
    "escape",
    "expired_blocks",
    "form_blocks",
    "text_blocks",
]

APPROVE = "humanwire_approve"
REJECT = "humanwire_reject"
OPEN_FORM = "humanwire_open_form"
OPEN_QUEUE = "humanwire_open_queue"
APPROVAL_APPROVE = "humanwire_approval_approve"
APPROVAL_REJECT = "humanwire_approval_reject"
_SECTION_LIMIT = 3000


def escape(text: str) -> str:
    """Slack's mrkdwn escaping: the three characters that start markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _section(text: str) -> Any:
    from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock

    if len(text) > _SECTION_LIMIT:
        text = text[: _SECTION_LIMIT - 1] + "…"
    return SectionBlock(text=MarkdownTextObject(text=text))


def _dicts(blocks: list[Any]) -> list[dict[str, Any]]:
    return [block.to_dict() for block in blocks]


def text_blocks(text: str) -> list[dict[str, Any]]:
    return _dicts([_section(escape(text))])


def approval_choices(form: Form) -> bool:
    """Whether ``form`` can be answered by a button: a required ``decision`` select
    offering ``approve`` and ``reject``, and no other required field."""
    decision = next((field for field in form.fields if field.id == "decision"), None)
    if decision is None or decision.type != "select" or not decision.required:
        return False
    values = {option.value for option in decision.options or ()}
    if not {"approve", "reject"} <= values:
        return False
    return all(not field.required for field in form.fields if field.id != "decision")


def _approval_text(form: Form) -> str:
    decision = next(field for field in form.fields if field.id == "decision")
    lines = [f"*{escape(form.title)}*"]
    if form.description:
        lines.append(escape(form.description))
    if decision.helper_text:
        lines.append(escape(decision.helper_text))
    return "\n".join(lines)


def form_blocks(text: str, form: Form, url: str) -> list[dict[str, Any]]:
    from slack_sdk.models.blocks import (
        ActionsBlock,
        ButtonElement,
        ContextBlock,
        MarkdownTextObject,
    )

    link = ButtonElement(text="Open the form", url=url, action_id=OPEN_FORM)
    if not approval_choices(form):
        return _dicts([_section(escape(text)), ActionsBlock(elements=[link])])
    buttons = [
        ButtonElement(text="Approve", action_id=APPROVE, value="approve", style="primary"),
        ButtonElement(text="Reject", action_id=REJECT, value="reject", style="danger"),
        link,
    ]
    note = ContextBlock(
        elements=[MarkdownTextObject(text="Open the form to add a comment with your decision.")]
    )
    return _dicts([_section(_approval_text(form)), ActionsBlock(elements=buttons), note])


def _when(at: float) -> str:
    fallback = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))
    return f"<!date^{int(at)}^{{date_short_pretty}} at {{time}}|{fallback}>"


def decided_blocks(form: Form, decision: str, user: str, at: float) -> list[dict[str, Any]]:
    """The approval message once decided: no buttons, who decided and when."""
    from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject

    label = "Approved" if decision == "approve" else "Rejected"
    mark = ":white_check_mark:" if decision == "approve" else ":x:"
    line = f"{mark} *{label}* by <@{escape(user)}> {_when(at)}"
    return _dicts(
        [_section(_approval_text(form)), ContextBlock(elements=[MarkdownTextObject(text=line)])]
    )


def decided_text(form: Form, decision: str, user: str, at: float) -> str:
    label = "Approved" if decision == "approve" else "Rejected"
    return f"{escape(form.title)}: {label} by <@{escape(user)}> {_when(at)}"


def expired_blocks(form: Form) -> list[dict[str, Any]]:
    from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject

    line = ":hourglass: This approval has expired: nothing was decided."
    return _dicts(
        [_section(_approval_text(form)), ContextBlock(elements=[MarkdownTextObject(text=line)])]
    )


def approval_request_blocks(
    text: str, value: str, url: str, queue: str | None = None
) -> list[dict[str, Any]]:
    """An approval request for one approver: ``value`` (``interactionId:position``) names
    the request and the approver on both buttons; ``queue``: the console's queue, a link
    button beside the page's."""
    from slack_sdk.models.blocks import ActionsBlock, ButtonElement

    buttons = [
        ButtonElement(text="Approve", action_id=APPROVAL_APPROVE, value=value, style="primary"),
        ButtonElement(text="Reject", action_id=APPROVAL_REJECT, value=value, style="danger"),
        ButtonElement(text="Open the page", url=url, action_id=OPEN_FORM),
    ]
    if queue is not None:
        buttons.append(ButtonElement(text="Open your queue", url=queue, action_id=OPEN_QUEUE))
    return _dicts([_section(escape(text)), ActionsBlock(elements=buttons)])


def approval_settled_blocks(text: str, line: str) -> list[dict[str, Any]]:
    """An approval request's message once the approver decided or it closed: no buttons,
    ``line`` (mrkdwn, escaped by the caller) under the text."""
    from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject

    return _dicts([_section(escape(text)), ContextBlock(elements=[MarkdownTextObject(text=line)])])


def decided_line(decision: str, user: str, at: float) -> str:
    label = "Approved" if decision == "approve" else "Rejected"
    mark = ":white_check_mark:" if decision == "approve" else ":x:"
    return f"{mark} *{label}* by <@{escape(user)}> {_when(at)}"
