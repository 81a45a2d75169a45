"""The inbox's approval requests: each one's title, action, approvers and tally, and a
form to decide as any approver still undecided (the inbox plays the approvers, as it
plays the recipients of messages). Rendering only; ``routes.py`` runs the decision."""

from __future__ import annotations

from collections.abc import Sequence

from ..engine.approval_access import InboxApproval
from ..forms.html import Html, action_block, join, render
from ..store.records import ApproverRecord

__all__ = ["VIA_LABELS", "approver_label", "render_approvals_panel"]

VIA_LABELS = {
    "sms_reply": "an sms reply",
    "whatsapp_reply": "a whatsapp reply",
    "whatsapp_button": "a whatsapp button",
    "slack_button": "a slack button",
    "telegram_button": "a telegram button",
    "discord_button": "a discord button",
    "teams_button": "a teams button",
    "page": "the approval page",
    "email_link": "an email link",
    "email_reply": "an email reply",
    "call_keypad": "the call's keypad",
    "call_speech": "speech on the call",
    "inbox": "the inbox",
    "console": "the console",
    "sandbox": "the sandbox API",
}
_CHANNELS = {
    "sms": "SMS",
    "whatsapp": "WhatsApp",
    "slack": "Slack",
    "email": "Email",
    "call": "Call",
    "link": "Link",
}


def approver_label(row: ApproverRecord) -> str:
    """ "Ada (link)", "+12025550100 (SMS)"."""
    return f"{row.to_addr} ({_CHANNELS.get(row.channel, row.channel)})"


def _chip(text: str, tone: str) -> Html:
    return render('<span class="chip {tone}">{text}</span>', tone=tone, text=text)


def _state(item: InboxApproval) -> Html:
    approval = item.approval
    chips = []
    if approval.decision == "approved":
        chips.append(_chip("approved", "ok"))
    elif approval.decision == "rejected":
        chips.append(_chip("rejected", "failed"))
    elif approval.status == "pending":
        chips.append(_chip("pending", "pending"))
    if approval.timed_out:
        chips.append(_chip("timed out", "pending"))
    if item.consumed:
        chips.append(_chip("consumed", "ended"))
    return render(
        '<span data-approval-state="{state}">{chips}</span>',
        state=_state_name(item),
        chips=join(chips, " "),
    )


def _state_name(item: InboxApproval) -> str:
    approval = item.approval
    if approval.timed_out and approval.decision is None:
        return "timed_out"
    return approval.decision or approval.status


def _action(item: InboxApproval) -> Html:
    action = item.request.action
    if action is None:
        return Html('<p class="small muted">No action attached.</p>')
    return action_block(action.name, action.arguments)


def _approvers(item: InboxApproval) -> Html:
    decided = {(str(d.approver.channel), d.approver.to): d for d in item.approval.decisions}
    rows = []
    for row in item.approvers:
        decision = decided.get((row.channel, row.to_addr))
        if decision is not None:
            what = render(
                "{verb} via {via}{comment}",
                verb="approved" if decision.decision == "approve" else "rejected",
                via=VIA_LABELS.get(str(decision.via), str(decision.via)),
                comment=f": “{decision.comment}”" if decision.comment else "",
            )
        elif row.asked_at is None:
            what = Html('<span class="muted">not asked yet (escalation)</span>')
        else:
            what = Html('<span class="muted">no decision</span>')
        rows.append(
            render(
                '<li><span class="mono">{who}</span>: {what}</li>',
                who=approver_label(row),
                what=what,
            )
        )
    return render('<ul class="approvers small">{rows}</ul>', rows=join(rows))


def _tally(item: InboxApproval) -> Html:
    request = item.request
    approval = item.approval
    approvals = sum(1 for d in approval.decisions if d.decision == "approve")
    rejections = sum(1 for d in approval.decisions if d.decision == "reject")
    return render(
        '<p class="small" data-tally>{approvals} of {quorum} approvals · {rejections} of '
        "{reject_quorum} rejections</p>"
        '<p class="small">{response}</p>{approvers}',
        approvals=approvals,
        quorum=request.quorum,
        rejections=rejections,
        reject_quorum=request.reject_quorum or 1,
        response=approval.response or "",
        approvers=_approvers(item),
    )


def _decide_form(item: InboxApproval, csrf: Html, live: frozenset[str]) -> Html:
    choices = [r for r in item.approvers if r.position in item.undecided and r.channel not in live]
    if not choices:
        return Html("")
    iid = item.approval.interaction_id
    options = join(
        render(
            '<option value="{position}">{label}</option>',
            position=r.position,
            label=approver_label(r),
        )
        for r in choices
    )
    comment = (
        render(
            '<label class="block" for="approval-comment-{iid}">Comment (optional)'
            '<input type="text" id="approval-comment-{iid}" name="comment" maxlength="2000" '
            'autocomplete="off"></label>',
            iid=iid,
        )
        if item.request.allow_comment
        else Html("")
    )
    return render(
        '<form method="post" action="/inbox/approvals/{iid}" data-action="decide">{csrf}'
        '<label class="block" for="approval-approver-{iid}">Decide as'
        '<select id="approval-approver-{iid}" name="approver">{options}</select></label>'
        "{comment}"
        '<button type="submit" name="decision" value="approve" class="small primary">'
        "Approve</button>"
        '<button type="submit" name="decision" value="reject" class="small danger">'
        "Reject</button></form>",
        iid=iid,
        csrf=csrf,
        options=options,
        comment=comment,
    )


def _item(item: InboxApproval, csrf: Html, sandbox: bool, live: frozenset[str]) -> Html:
    request = item.request
    description = (
        render('<p class="small">{text}</p>', text=request.description)
        if request.description
        else Html("")
    )
    return render(
        '<li class="msg" data-key="a-{iid}" data-approval="{iid}">'
        '<div class="msg-head">{chip} <strong>{title}</strong> '
        '<span data-live-part="status">{state}</span></div>'
        '<div class="msg-body">{description}{action}</div>'
        '<div data-live-part="tally">{tally}</div>'
        '<div class="msg-actions" data-live-part="actions">{actions}</div></li>',
        iid=item.approval.interaction_id,
        chip=_chip("Approval", "call"),
        title=request.title,
        state=_state(item),
        description=description,
        action=_action(item),
        tally=_tally(item),
        actions=_decide_form(item, csrf, live) if sandbox else Html(""),
    )


def render_approvals_panel(
    approvals: Sequence[InboxApproval],
    csrf: Html,
    *,
    sandbox: bool,
    live: frozenset[str] = frozenset(),
) -> Html:
    """The panel (empty when the account never asked for an approval). Approvers on the
    ``live`` channels (a real provider reaches them) are not offered to decide as."""
    if not approvals:
        return Html('<section class="panel" data-live-panel="approvals" hidden></section>')
    return render(
        '<section class="panel" data-live-panel="approvals"><h2>Approval requests</h2>'
        '<ul class="thread" data-live="approvals">{items}</ul></section>',
        items=join(_item(a, csrf, sandbox, live) for a in approvals),
    )
