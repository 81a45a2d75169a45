"""How decisions add up to an outcome, and the text a model reads about it.

A person counts once, however many channels reach them (``person_of``); their first
decision stands. The request is

* **approved** once ``quorum`` different people approved;
* **rejected** once ``rejectQuorum`` (default 1) different people rejected, or once the
  quorum can no longer be reached (too few people left undecided, escalation tiers not
  yet asked included).

Decisions are counted in the order they came: what settled the request first is its
outcome, and decisions after that are recorded but change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from humanwire.types.approvals import (
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
    Approver,
    OnTimeout,
    person_of,
)

__all__ = ["Counted", "Outcome", "Rules", "Tally", "response_text", "timeout_text"]

Outcome = ApprovalOutcome
Person = tuple[str, str]


@dataclass(frozen=True)
class Rules:
    """What decides a request: who may decide, and how many it takes."""

    people: frozenset[Person]
    quorum: int
    reject_quorum: int = 1

    @classmethod
    def of(cls, request: ApprovalRequest) -> Rules:
        people = frozenset(person_of(a) for _, a in request.all_approvers_with_paths())
        return cls(people, request.quorum, request.reject_quorum or 1)

    @classmethod
    def asking(cls, request: ApprovalRequest, approvers: Iterable[Approver]) -> Rules:
        """The request's quorums over the approvers it asks now: those it was made with,
        but for a place handed on since (``approval_claims``, ``approval_delegations``)."""
        people = frozenset(person_of(a) for a in approvers)
        return cls(people, request.quorum, request.reject_quorum or 1)


@dataclass(frozen=True)
class Counted:
    """One decision as the tally takes it."""

    approver: Approver
    decision: ApprovalDecision
    comment: str | None = None


@dataclass
class Tally:
    """The decisions so far and the outcome they settled (None while undecided)."""

    rules: Rules
    approvals: list[Counted] = field(default_factory=list)
    rejections: list[Counted] = field(default_factory=list)
    outcome: Outcome | None = None
    _decided: set[Person] = field(default_factory=set)

    @classmethod
    def of(cls, rules: Rules, decisions: Iterable[Counted] = ()) -> Tally:
        tally = cls(rules)
        for decision in decisions:
            tally.add(decision)
        return tally

    def has_decided(self, approver: Approver) -> bool:
        """Whether this person decided already (by any channel)."""
        return person_of(approver) in self._decided

    def add(self, decision: Counted) -> bool:
        """Counts ``decision``; False (nothing counted) when its person decided already
        or is not an approver of the request."""
        person = person_of(decision.approver)
        if person in self._decided or person not in self.rules.people:
            return False
        self._decided.add(person)
        if decision.decision == "approve":
            self.approvals.append(decision)
        else:
            self.rejections.append(decision)
        if self.outcome is None:
            self.outcome = self._settled()
        return True

    def _settled(self) -> Outcome | None:
        rules = self.rules
        if len(self.approvals) >= rules.quorum:
            return "approved"
        if len(self.rejections) >= rules.reject_quorum:
            return "rejected"
        undecided = len(rules.people) - len(self._decided)
        if len(self.approvals) + undecided < rules.quorum:
            return "rejected"
        return None


def _names(decisions: Sequence[Counted]) -> str:
    names = [d.approver.to or d.approver.person or "?" for d in decisions]
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def response_text(tally: Tally) -> str | None:
    """The text for a model once decided: "Approved by +12025550100 (2 of 2).",
    "Rejected by U0123ABCD: not this quarter."; None while undecided."""
    if tally.outcome == "approved":
        approvals = tally.approvals[: tally.rules.quorum]
        return f"Approved by {_names(approvals)} ({len(approvals)} of {tally.rules.quorum})."
    if tally.outcome == "rejected":
        if not tally.rejections:  # not reachable: a rejection is what makes quorum unreachable
            return "Rejected."
        comments = "; ".join(d.comment for d in tally.rejections if d.comment)
        text = f"Rejected by {_names(tally.rejections)}"
        if not comments:
            return f"{text}."
        return f"{text}: {comments}" + ("" if comments.endswith((".", "!", "?")) else ".")
    return None


def timeout_text(on_timeout: OnTimeout, tally: Tally) -> str:
    """The text for a model when the windows closed undecided."""
    if on_timeout == "approve":
        return "No decision in time: approved by default."
    if on_timeout == "reject":
        return "No decision in time: rejected by default."
    return (
        f"No decision in time ({len(tally.approvals)} of {tally.rules.quorum} approvals); "
        "nothing was decided."
    )
