"""What approvers read and what they text back: the request as one text (title, the
action in one line, how to answer, the page's link), reminders, the clarifying text, and
the reading of a reply ("YES", "no not this quarter", "YES 4821").

A reply is read strictly: it must start with a yes or a no word; anything else is unclear
and gets one clarifying text back, never a guess."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CODE",
    "EmailLinks",
    "Reply",
    "action_line",
    "ask_text",
    "call_answer",
    "call_prompt",
    "clarify_text",
    "email_ask_text",
    "email_reminder_text",
    "email_unread_text",
    "parse_reply",
    "queue_line",
    "reminder_text",
]

_YES = frozenset({"yes", "y", "approve", "approved", "ok", "okay"})
_NO = frozenset({"no", "n", "reject", "rejected", "deny", "denied"})
CODE = re.compile(r"\d{4}")
"""An approval's short code in a reply (a text without one names no approval)."""
_SEPARATORS = " \t\r\n,.:;!-"
_ACTION_LINE = 160
"""A text gives the action in one line, cut to this many characters."""


@dataclass(frozen=True)
class Reply:
    """A reply read as a decision: ``approve`` / ``reject``, the short code it named (if
    any) and the reason that followed."""

    decision: str
    code: str | None
    comment: str | None


def parse_reply(body: str) -> Reply | None:
    """``body`` as a decision, or None when it is not one (unclear)."""
    words = body.strip().split(maxsplit=1)
    if not words:
        return None
    first = words[0].strip(_SEPARATORS).lower()
    rest = words[1].strip() if len(words) > 1 else ""
    if first in _YES:
        decision = "approve"
    elif first in _NO:
        decision = "reject"
    else:
        return None
    code = None
    head = rest.split(maxsplit=1)
    if head and CODE.fullmatch(head[0].strip(_SEPARATORS)):
        code = head[0].strip(_SEPARATORS)
        rest = head[1].strip() if len(head) > 1 else ""
    comment = rest.lstrip(_SEPARATORS).strip() or None
    return Reply(decision, code, comment)


def action_line(action: Mapping[str, Any] | None) -> str | None:
    """The action in one line: ``wire_money(amount=4200, to="ACME Ltd")``."""
    if not action:
        return None
    arguments = action.get("arguments") or {}
    parts = [
        f"{name}={json.dumps(value, ensure_ascii=False, separators=(',', ':'))}"
        for name, value in arguments.items()
    ]
    line = f"{action.get('name')}({', '.join(parts)})"
    return line if len(line) <= _ACTION_LINE else line[: _ACTION_LINE - 1] + "…"


def _answer_hint(code: str | None, comments: bool = True) -> str:
    """How to answer; ``comments``: the request takes a comment (``allowComment``), so
    the text says a reason may follow."""
    reason = " (a reason may follow)" if comments else ""
    if code is None:
        return f"Reply YES or NO{reason}."
    return f"Reply YES {code} or NO {code}{reason}."


def queue_line(queue: str, *, short: bool = False) -> str:
    """The line that offers the console's queue (``queue``: its URL) beside the
    request's own page; ``short`` for an SMS, where every character counts."""
    return f"Your queue: {queue}" if short else f"Or open your queue: {queue}"


def ask_text(
    title: str,
    description: str | None,
    action: Mapping[str, Any] | None,
    url: str,
    code: str | None,
    *,
    replies: bool,
    comments: bool = True,
    queue: str | None = None,
    short: bool = False,
) -> str:
    """The text that asks an approver. ``replies``: the channel takes a YES / NO reply
    (sms, whatsapp); otherwise the page's link is the way to answer. ``comments``: the
    request takes a comment (else no reason is offered). ``queue``: the console's queue,
    offered on a last line (``short``: in its SMS form)."""
    lines = [f"Approval requested: {title}"]
    if description:
        lines.append(description)
    if line := action_line(action):
        lines.append(f"Action: {line}")
    if replies:
        lines.append(_answer_hint(code, comments))
    lines.append(f"Decide here: {url}")
    if queue is not None:
        lines.append(queue_line(queue, short=short))
    return "\n".join(lines)


def reminder_text(
    title: str,
    url: str,
    code: str | None,
    *,
    replies: bool,
    comments: bool = True,
    queue: str | None = None,
    short: bool = False,
) -> str:
    lines = [f"Reminder: your decision is still needed: {title}"]
    if replies:
        lines.append(_answer_hint(code, comments))
    lines.append(f"Decide here: {url}")
    if queue is not None:
        lines.append(queue_line(queue, short=short))
    return "\n".join(lines)


def clarify_text(open_requests: Sequence[tuple[str, str | None]], comments: bool = True) -> str:
    """One text back for a reply that could not be read (``(title, code)`` of each
    request open for the number). ``comments``: every one of them takes a comment."""
    if len(open_requests) == 1:
        title, code = open_requests[0]
        hint = _answer_hint(code, comments)
        return f'Sorry, we could not read that as a decision on "{title}". ' + hint
    listed = "; ".join(f'"{title}": YES {code} or NO {code}' for title, code in open_requests)
    reason = " (a reason may follow)" if comments else ""
    return (
        "Sorry, we could not tell which request that answers. "
        f"Reply with its code: {listed}{reason}."
    )


@dataclass(frozen=True)
class EmailLinks:
    """An email approver's three links: their page, and the signed approve / reject
    links (each leads to a one-click confirmation on the service)."""

    page: str
    approve: str
    reject: str
    queue: str | None = None
    """The console's queue, when the approver is a person who can sign in there."""


def _action_lines(action: Mapping[str, Any] | None) -> list[str]:
    """The action readably, an argument a line (an email has room for it)."""
    if not action:
        return []
    lines = [f"Action: {action.get('name')}"]
    for name, value in (action.get("arguments") or {}).items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"  {name}: {shown}")
    return lines


def _email_answers(links: EmailLinks) -> list[str]:
    return [
        f"Approve: {links.approve}",
        f"Reject: {links.reject}",
        "",
        "Or reply to this email with YES or NO (a reason may follow).",
        f"The request and its decisions so far: {links.page}",
        *(
            []
            if links.queue is None
            else [f"Or open your queue (every request waiting for you): {links.queue}"]
        ),
    ]


def email_ask_text(
    title: str, description: str | None, action: Mapping[str, Any] | None, links: EmailLinks
) -> str:
    """The email that asks an email approver (its HTML part makes the links clickable)."""
    lines = [f"Approval requested: {title}", ""]
    if description:
        lines += [description, ""]
    if action_lines := _action_lines(action):
        lines += [*action_lines, ""]
    return "\n".join(lines + _email_answers(links))


def email_reminder_text(title: str, links: EmailLinks) -> str:
    return "\n".join(
        [f"Reminder: your decision is still needed: {title}", "", *_email_answers(links)]
    )


def email_unread_text(title: str, links: EmailLinks) -> str:
    """The answer to an email reply that decides nothing (unsigned, or no YES / NO)."""
    return "\n".join(
        [
            f'Your reply did not decide "{title}": a reply decides only when it reads YES or '
            "NO and your mail system signed it for your address. Use a link instead:",
            "",
            f"Approve: {links.approve}",
            f"Reject: {links.reject}",
            f"The request: {links.page}",
        ]
    )


def call_prompt(title: str, description: str | None, action: Mapping[str, Any] | None) -> str:
    """What the voice agent is told when it calls an approver."""
    lines = [
        f"You are calling to ask for an approval: {title}.",
    ]
    if description:
        lines.append(description)
    if line := action_line(action):
        lines.append(f"The action: {line}.")
    lines.append(
        "Ask them to say approve or reject, or to press 1 to approve or 2 to reject. "
        "Once they have answered, thank them and end the call. Decide nothing for them."
    )
    return "\n".join(lines)


_KEYS = {"1": "approve", "2": "reject"}


def call_answer(answers: Sequence[str]) -> tuple[str, str] | None:
    """The first of the callee's ``answers`` (in order) that is a decision: a key (1
    approves, 2 rejects: ``call_keypad``) or a spoken yes / no word (``call_speech``);
    None when none is."""
    for answer in answers:
        text = answer.strip().rstrip("#")
        if text in _KEYS:
            return _KEYS[text], "call_keypad"
        reply = parse_reply(text)
        if reply is not None:
            return reply.decision, "call_speech"
    return None
