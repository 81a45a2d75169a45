"""Whose a reply to a number is, when no carrier says so (an sms or whatsapp text a
provider reported). A reply to an account's reserved number is that account's. A reply
to a shared sender is the one account's that has something open for the person there (an
ask sent from that sender, an approval asked of them on that channel). When several
accounts have, only a reply naming one request's code goes anywhere, to that request;
anything else goes to no account and the person gets one text back listing the open
requests and their codes. So no account ever takes, or decides on, a reply meant for
another: the one rule for every kind of request on every shared sender.

An approver's code is theirs (``ApproverRecord.code``, shown in the text that asked them
when the number had others open). An ask's code is derived from its interaction id, so it
needs no storage: four digits, six for one whose four collide with another open request's
(a reply naming either is read), shown in the clarifying text."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..approvals import texts
from ..delivery.chat import CHAT_CHANNELS
from ..store.records import InteractionRecord

__all__ = [
    "NUMBER_PAIR_CHANNELS",
    "Addressee",
    "Waiting",
    "ask_codes",
    "ask_label",
    "clarify_several_text",
    "named",
    "without_code",
]

NUMBER_PAIR_CHANNELS = ("sms", "whatsapp", *(c.name for c in CHAT_CHANNELS.values() if c.by_pair))
"""The channels a reply reaches by its sender pair (where one number, or one shared bot,
serves many accounts): the chat channels by their registration."""

_SEPARATORS = " \t\r\n,.:;!-"
_DIGITS = re.compile(r"[0-9]{4,6}")
_LABEL = 60
"""An ask is named in the clarifying text by its message, cut to this many characters."""


@dataclass(frozen=True)
class Addressee:
    """Whose a text is: the account, and the request its code named when only the code
    could tell (None: matched within the account as every text is)."""

    account_id: str
    request: InteractionRecord | None = None
    body: str = ""
    """The text as ``request`` takes it: an ask's answer without its code."""


@dataclass(frozen=True)
class Waiting:
    """Something open for a reply from one person on one number: an ask (a message
    interaction) or their part in an approval request."""

    account_id: str
    interaction_id: str
    label: str
    """What the clarifying text calls it: the ask's message, the request's title."""
    codes: tuple[str, ...]
    """The codes a reply names it by; the first is the one shown."""
    decision: bool
    """An approval: its reply is YES / NO and the code. An ask: the code, then the answer."""
    comments: bool = True
    """An approval that takes a reason (``allowComment``)."""


def ask_codes(interaction_id: str) -> tuple[str, str]:
    """An ask's four-digit code and its six-digit one (for when the four collide)."""
    number = int.from_bytes(hashlib.sha256(interaction_id.encode()).digest()[:8], "big")
    return f"{number % 10_000:04d}", f"{number % 1_000_000:06d}"


def ask_label(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= _LABEL else line[: _LABEL - 1].rstrip() + "…"


def _codes_in(body: str) -> tuple[str | None, str | None]:
    """The code a reply names as its first word, and the one it names after a YES / NO."""
    words = [word.strip(_SEPARATORS) for word in body.split(maxsplit=2)[:2]]
    first = words[0] if words and _DIGITS.fullmatch(words[0]) else None
    decided = texts.parse_reply(body) is not None
    second = words[1] if decided and len(words) > 1 and _DIGITS.fullmatch(words[1]) else None
    return first, second


def named(waiting: Sequence[Waiting], body: str) -> list[Waiting]:
    """What of ``waiting`` the reply names by its code (an approval after its YES / NO; an
    ask first, or after a YES / NO), one entry per request."""
    first, after_decision = _codes_in(body)
    found: dict[str, Waiting] = {}
    for item in waiting:
        if after_decision in item.codes or (not item.decision and first in item.codes):
            found.setdefault(item.interaction_id, item)
    return list(found.values())


def without_code(body: str, codes: Sequence[str]) -> str:
    """An ask's answer: the reply without the code that named the ask."""
    words = body.split(maxsplit=2)
    if words and words[0].strip(_SEPARATORS) in codes:
        return " ".join(words[1:]).lstrip(_SEPARATORS).strip()
    if len(words) > 1 and words[1].strip(_SEPARATORS) in codes:
        return " ".join([words[0], *words[2:]]).strip()
    return body.strip()


def shown(waiting: Sequence[Waiting]) -> list[Waiting]:
    """``waiting`` once per request, each ask with the code it is shown with: six digits
    when its four are another open request's."""
    unique: dict[str, Waiting] = {}
    for item in waiting:
        unique.setdefault(item.interaction_id, item)
    items = list(unique.values())
    result = []
    for item in items:
        others = {c for other in items if other is not item for c in other.codes[:1]}
        if not item.decision and item.codes[0] in others:
            item = dataclasses.replace(item, codes=item.codes[1:] + item.codes[:1])
        result.append(item)
    return result


def clarify_several_text(waiting: Sequence[Waiting]) -> str:
    """The text back for a reply to a shared sender that names none of the requests
    several accounts have open for the person there."""
    items = shown(waiting)
    listed = []
    for item in items:
        code = item.codes[0]
        if item.decision:
            listed.append(f'"{item.label}": YES {code} or NO {code}')
        else:
            listed.append(f'"{item.label}": reply {code} and your answer')
    approvals = [item for item in items if item.decision]
    reason = " (a reason may follow)" if approvals and all(i.comments for i in approvals) else ""
    return (
        "Sorry, several requests are waiting for your reply on this number and that reply "
        f"named none of them. Reply with the code of the one you answer: {'; '.join(listed)}"
        f"{reason}."
    )
