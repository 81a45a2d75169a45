"""Framework-neutral human approval: ask people, by an approval request (``POST
/approvals``), whether an action may run, and use each approval once.

The adapters (``humanwire.langchain``, ``humanwire.llama_index``, ``humanwire.mcp`` and the
newer ones) build on this module; it uses only the core client and imports no agent
framework.

- :class:`ApprovalRequest` is what needs approving: an action name, its arguments and an
  optional description. The approval is bound to it: ``action = {"name", "arguments"}``
  travels with the request, and its digest (``action_digest_of``) is what
  :meth:`Approver.consume` presents before the action runs.
- :class:`Approver` says whom to ask (one recipient by ``to`` / ``channel``, or several
  ``approvers`` with a ``quorum``, ``escalation`` tiers, ``remind_every``), how long to
  hold (``wait_time``) and keep the request open (``follow_up_time``), and what a timeout
  decides (``on_timeout``, or the older ``default_on_timeout``). ``request`` /
  ``arequest`` ask, wait and, approved, consume the approval.
- :func:`decision_from_approval` reads the service's record (the response, ``GET
  /approvals/{id}``, an ``approval.decided`` webhook) into an :class:`ApprovalDecision`.

Decisions this module makes:

- The service decides timeouts: ``on_timeout`` ("reject" unless told otherwise) is sent
  with the request and the decision then says ``timed_out``; so a timeout approval can be
  consumed like any other. A blocking ``request`` whose hold ends while the request stays
  open (a ``follow_up_time`` longer than the hold) is not approved: it fails closed.
- Used once: an approved decision is consumed (``POST /approvals/{id}/consume``) with the
  digest of the action about to run, before it runs. ``already_consumed`` means the
  action ran already (a retried step, a resumed run, a repeated webhook): the decision
  becomes ``decision="consumed"``, ``approved=False``, and the action is not run again;
  the text the model reads says so. ``not_approved`` is a rejection.
- No "edit" and no "respond": an approval is about the action as asked (its digest), so
  ``allow_edit=True`` / ``allow_respond=True`` are refused (the approval forms that
  offered them are gone; ``build_approval_form`` and ``decision_from_values`` still read
  old forms).
- An unknown decision value is a rejection: approval fails closed.
- The recipient comes from ``to``, else ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` /
  ``HUMANWIRE_SLACK_TO`` / ``HUMANWIRE_EMAIL_TO``, else, on the embedded service (no base
  URL, or a loopback one), the inbox's default human; otherwise a ``ValueError`` names the
  variable to set.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlsplit

from .types import FieldOption, FormField, FormResponse

if TYPE_CHECKING:
    from ._client import AsyncHumanWire, HumanWire
    from .types.approvals import Approval, Escalation, OnTimeout
    from .types.approvals import Approver as ApproverSpec

__all__ = [
    "MESSAGE_RECIPIENT_ENV",
    "RECIPIENT_ENV",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "Channel",
    "DecisionKind",
    "action_digest_of",
    "action_of",
    "build_approval_form",
    "check_follow_up_time",
    "check_wait_time",
    "consume_approval",
    "consumed_decision",
    "decision_after_hold",
    "decision_from_approval",
    "decision_from_response",
    "decision_from_values",
    "default_recipient",
    "format_arguments",
    "is_local_service",
    "resolve_recipient",
    "timeout_decision",
]

Channel = Literal["sms", "whatsapp", "slack", "email", "call", "link", "telegram"]
"""How the one recipient of ``to`` is asked (an approver's ``channel``)."""
DecisionKind = Literal["approve", "reject", "edit", "respond", "timeout", "consumed"]
"""``consumed``: approved, but the approval was used already: the action ran before and
does not run again. (``edit`` and ``respond`` only come from old approval forms.)"""

RECIPIENT_ENV: dict[str, str] = {
    "sms": "HUMANWIRE_SMS_TO",
    "whatsapp": "HUMANWIRE_WHATSAPP_TO",
    "slack": "HUMANWIRE_SLACK_TO",
    "email": "HUMANWIRE_EMAIL_TO",
    "call": "HUMANWIRE_SMS_TO",
    "telegram": "HUMANWIRE_TELEGRAM_TO",
}
"""The environment variable holding each channel's default recipient."""
MESSAGE_RECIPIENT_ENV: dict[str, str] = {
    "email": "HUMANWIRE_EMAIL_TO",
    "telegram": "HUMANWIRE_TELEGRAM_TO",
    "teams": "HUMANWIRE_TEAMS_TO",
    "discord": "HUMANWIRE_DISCORD_TO",
}
"""The same for the channels the message tools reach."""

DEFAULT_APPROVAL_WAIT_TIME = 300
_MAX_VALUE_CHARS = 500
_MAX_TITLE_CHARS = 200


# --- bounds and recipients ----------------------------------------------------------


def check_wait_time(value: float | None, *, name: str = "wait_time") -> float | None:
    """``None`` or seconds from 1 to 600, as the service accepts; ``ValueError`` otherwise."""
    return _check_seconds(value, 1, 600, name)


def check_follow_up_time(value: float | None, *, name: str = "follow_up_time") -> float | None:
    """``None`` or seconds from 1 to 60000; ``ValueError`` otherwise."""
    return _check_seconds(value, 1, 60000, name)


def _check_seconds(value: float | None, low: float, high: float, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number of seconds from {low:g} to {high:g}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low:g} to {high:g} seconds, got {value:g}")
    return value


def is_local_service(client: object | None = None) -> bool:
    """Whether requests go to the embedded service: in-process, or ``humanwire serve`` on
    loopback. Asks the client when it can tell; else reads its base URL or the
    environment. Decides where the inbox's default human is a valid recipient."""
    if client is not None:
        embedded = getattr(client, "is_embedded", None)
        if isinstance(embedded, bool):
            return embedded
        base_url = getattr(client, "base_url", None)
        base = str(base_url) if base_url is not None else ""
    else:
        base = os.environ.get("HUMANWIRE_BASE_URL", "")
    if not base:
        return True
    host = urlsplit(base).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_recipient(channel: str) -> str:
    """The inbox's default human on the embedded service, for ``channel``."""
    from .types.sandbox import (
        DEFAULT_HUMAN_DISCORD,
        DEFAULT_HUMAN_EMAIL,
        DEFAULT_HUMAN_PHONE,
        DEFAULT_HUMAN_SLACK,
        DEFAULT_HUMAN_TEAMS,
        DEFAULT_HUMAN_TELEGRAM,
    )

    if channel == "email":
        return DEFAULT_HUMAN_EMAIL
    if channel == "telegram":
        return DEFAULT_HUMAN_TELEGRAM
    if channel == "teams":
        return DEFAULT_HUMAN_TEAMS
    if channel == "discord":
        return DEFAULT_HUMAN_DISCORD
    return DEFAULT_HUMAN_SLACK if channel == "slack" else DEFAULT_HUMAN_PHONE


def resolve_recipient(channel: str, to: str | None = None, client: object | None = None) -> str:
    """``to``, else the channel's environment variable, else (embedded service) the default
    human. Raises ``ValueError`` naming the variable to set when none applies."""
    if to:
        return to
    if channel == "link":
        return "approver"  # a name on the page: nothing is sent to a link approver
    variable = RECIPIENT_ENV.get(channel) or MESSAGE_RECIPIENT_ENV.get(channel)
    if variable is None:
        raise ValueError(
            f"unknown channel {channel!r}: use one of sms, whatsapp, slack, email, call, link"
        )
    from_env = os.environ.get(variable, "").strip()
    if from_env:
        return from_env
    if is_local_service(client):
        return default_recipient(channel)
    raise ValueError(
        f"no {channel} recipient: pass to=... or set {variable} "
        "(the inbox's default human applies only on the embedded service: in process, or "
        "humanwire serve on a loopback HUMANWIRE_BASE_URL)"
    )


# --- request, form, decision ----------------------------------------------------------


@dataclass(frozen=True)
class ApprovalRequest:
    """An action waiting for a human's go-ahead."""

    action: str
    arguments: dict[str, Any] = field(default_factory=dict)
    description: str | None = None


@dataclass(frozen=True)
class ApprovalDecision:
    """What the human decided, or what the timeout default decided for them.

    ``approved`` says whether the action may run (with ``arguments`` instead of the
    original ones when not ``None``). ``timed_out`` is true only when nobody answered.
    """

    approved: bool
    decision: DecisionKind
    comment: str | None = None
    timed_out: bool = False
    arguments: dict[str, Any] | None = None
    interaction_id: str = ""
    action_digest: str | None = None
    """The digest of the action the approval is bound to (what ``consume`` presents)."""

    @property
    def text(self) -> str:
        """A sentence for an agent or a log: who decided what, and why."""
        comment = f": {self.comment}" if self.comment else ""
        if self.decision == "consumed":
            return "Approved, but this approval was used already: the action ran before."
        if self.timed_out:
            outcome = "approved" if self.approved else "rejected"
            return f"No approval decision arrived in time; {outcome} by default (timeout)."
        if self.decision == "approve":
            return f"Approved by a human{comment}."
        if self.decision == "edit":
            return f"Approved by a human with edited arguments{comment}."
        if self.decision == "respond":
            return f"The human answered instead of running it{comment}."
        return f"Rejected by a human{comment}."


def action_of(request: ApprovalRequest) -> dict[str, Any]:
    """The ``action`` an approval request carries for ``request``: its name and its
    arguments as plain JSON (a value JSON cannot hold, a date or an object, as its text),
    so the digest is computable on both sides."""
    arguments = json.loads(json.dumps(request.arguments, default=str))
    return {"name": request.action, "arguments": arguments}


def action_digest_of(request: ApprovalRequest) -> str:
    """The digest binding an approval to ``request``'s action (``sha256:…``)."""
    from .types.approvals import action_digest

    return action_digest(action_of(request))


def format_arguments(arguments: dict[str, Any]) -> str:
    """One ``name: value`` line per argument, values as JSON unless plain text, long
    values cut, so a person can read what is about to run."""
    if not arguments:
        return "(no arguments)"
    lines = []
    for name, value in arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        if len(shown) > _MAX_VALUE_CHARS:
            shown = shown[: _MAX_VALUE_CHARS - 1] + "…"
        lines.append(f"{name}: {shown}")
    return "\n".join(lines)


def build_approval_form(
    request: ApprovalRequest, *, allow_edit: bool = False, allow_respond: bool = False
) -> tuple[str, list[FormField]]:
    """The approval form for ``request``: its title and fields.

    The arguments are shown readably in the ``decision`` field's helper text; with
    ``allow_edit`` an ``arguments`` textarea shows them as JSON (as its placeholder: a form
    has no default value) and takes a replacement object.
    """
    title = f"Approve {request.action}?"
    if len(title) > _MAX_TITLE_CHARS:
        title = title[: _MAX_TITLE_CHARS - 2] + "…?"
    options = [
        FieldOption(label="Approve", value="approve"),
        FieldOption(label="Reject", value="reject"),
    ]
    if allow_edit:
        options.append(FieldOption(label="Approve with edited arguments", value="edit"))
    if allow_respond:
        options.append(FieldOption(label="Answer the agent instead", value="respond"))
    helper = f"{request.action} will run with:\n{format_arguments(request.arguments)}"
    fields = [
        FormField(
            id="decision",
            label="Decision",
            type="select",
            required=True,
            options=options,
            helper_text=helper,
        ),
        FormField(
            id="comment",
            label="Comment (optional)",
            type="textarea",
            helper_text=(
                "Passed to the agent: the reason for a rejection"
                + (", or your answer" if allow_respond else "")
                + "."
            ),
        ),
    ]
    if allow_edit:
        fields.append(
            FormField(
                id="arguments",
                label="Edited arguments (JSON)",
                type="textarea",
                placeholder=json.dumps(request.arguments, indent=2, default=str),
                helper_text="Only for an edit: a JSON object replacing the arguments. "
                "Leave empty to keep them as shown.",
            )
        )
    return title, fields


def decision_from_values(values: dict[str, str], *, interaction_id: str = "") -> ApprovalDecision:
    """Read a submitted approval form back into a decision (fails closed)."""
    raw = (values.get("decision") or "").strip().lower()
    comment = (values.get("comment") or "").strip() or None
    if raw == "approve":
        return ApprovalDecision(True, "approve", comment, interaction_id=interaction_id)
    if raw == "respond":
        return ApprovalDecision(False, "respond", comment, interaction_id=interaction_id)
    if raw == "edit":
        text = (values.get("arguments") or "").strip()
        if not text:
            return ApprovalDecision(True, "edit", comment, interaction_id=interaction_id)
        try:
            edited = json.loads(text)
        except json.JSONDecodeError as exc:
            problem = f"not valid JSON ({exc.msg})"
        else:
            if isinstance(edited, dict):
                return ApprovalDecision(
                    True, "edit", comment, arguments=edited, interaction_id=interaction_id
                )
            problem = "not a JSON object"
        note = f"The edited arguments were {problem}, so the action was not run."
        return ApprovalDecision(
            False, "reject", f"{note} {comment}" if comment else note, interaction_id=interaction_id
        )
    if raw != "reject":
        note = f"Unknown decision {raw!r}; treated as a rejection."
        comment = f"{note} {comment}" if comment else note
    return ApprovalDecision(False, "reject", comment, interaction_id=interaction_id)


def timeout_decision(
    default_on_timeout: Literal["approve", "reject"], *, interaction_id: str = ""
) -> ApprovalDecision:
    """Nobody answered: the configured default applies, marked as a timeout."""
    return ApprovalDecision(
        approved=default_on_timeout == "approve",
        decision="timeout",
        timed_out=True,
        interaction_id=interaction_id,
    )


def decision_from_response(
    response: FormResponse, *, default_on_timeout: Literal["approve", "reject"] = "reject"
) -> ApprovalDecision:
    """The decision a form response carries, or the timeout default when it carries none."""
    if response.responded and response.values is not None:
        return decision_from_values(response.values, interaction_id=response.interaction_id)
    return timeout_decision(default_on_timeout, interaction_id=response.interaction_id)


# --- the approval request's record as a decision ------------------------------------------


def decision_from_approval(approval: Approval) -> ApprovalDecision | None:
    """The decision the service's record holds (``POST`` / ``GET /approvals``, the
    ``approval.decided`` payload); ``None`` while it is pending. Ended undecided
    (``onTimeout: none``) is a timeout that is not approved."""
    if approval.status != "ended" and approval.decision is None:
        return None
    approved = approval.decision == "approved"
    wanted: DecisionKind = "approve" if approved else "reject"
    comments = [d.comment for d in approval.decisions if d.decision == wanted and d.comment]
    kind: DecisionKind = "timeout" if approval.timed_out or approval.decision is None else wanted
    return ApprovalDecision(
        approved=approved,
        decision=kind,
        comment="; ".join(comments) or None,
        timed_out=approval.timed_out or approval.decision is None,
        interaction_id=approval.interaction_id,
        action_digest=approval.action_digest,
    )


def consumed_decision(decision: ApprovalDecision) -> ApprovalDecision:
    """``decision`` once its approval turned out used already: not to run again."""
    return dataclasses.replace(decision, approved=False, decision="consumed")


def _not_approved(decision: ApprovalDecision, message: str) -> ApprovalDecision:
    note = f"The service refused to consume the approval ({message}); not run."
    return dataclasses.replace(decision, approved=False, decision="reject", comment=note)


def decision_after_hold(approval: Approval) -> ApprovalDecision:
    """The decision a held request came back with: the record's, else (still open after
    the hold) not approved, as a timeout that says the request stays open."""
    return decision_from_approval(approval) or _open_after_hold(approval)


def _open_after_hold(approval: Approval) -> ApprovalDecision:
    """A blocking request whose hold ended while the request stays open: fails closed."""
    return ApprovalDecision(
        approved=False,
        decision="timeout",
        comment="No decision within the wait; the request stays open.",
        timed_out=True,
        interaction_id=approval.interaction_id,
        action_digest=approval.action_digest,
    )


# --- the approver ---------------------------------------------------------------------


class Approver:
    """Sends approval requests (``POST /approvals``) and waits for the decision.

    Whom to ask: ``to`` on ``channel`` (one person; ``to`` resolved as
    :func:`resolve_recipient` says), ``person`` (a person of the people directory, asked
    on their first confirmed address), or ``approvers`` (``[{"channel", "to"} or
    {"person"}, …]``, 1 to 20; quorum counts people) with ``quorum`` approvals needed
    (``reject_quorum`` rejections reject; one rejection by default), ``escalation``
    tiers (``[{"after": s, "approvers": […]}]``) and ``remind_every`` seconds between
    reminders. ``on_timeout`` (``"reject"``,
    ``"approve"``, ``"none"``) is what the service decides when nobody did in time;
    ``default_on_timeout`` is its older name.

    ``client`` may be a ``HumanWire`` (used by :meth:`request`) or an ``AsyncHumanWire``
    (used by :meth:`arequest`); give the other as ``async_client`` / leave it out to have
    it built from the environment when first needed.
    """

    def __init__(
        self,
        client: HumanWire | AsyncHumanWire | None = None,
        *,
        async_client: AsyncHumanWire | None = None,
        to: str | None = None,
        channel: Channel = "sms",
        person: str | None = None,
        approvers: Sequence[Mapping[str, str] | ApproverSpec] | None = None,
        quorum: int | None = None,
        reject_quorum: int | None = None,
        escalation: Sequence[Mapping[str, Any] | Escalation] | None = None,
        remind_every: float | None = None,
        wait_time: float = DEFAULT_APPROVAL_WAIT_TIME,
        follow_up_time: float | None = None,
        on_timeout: OnTimeout | None = None,
        default_on_timeout: Literal["approve", "reject"] | None = None,
        allow_comment: bool | None = None,
        allow_edit: bool = False,
        allow_respond: bool = False,
    ) -> None:
        if channel not in _CHANNELS:
            raise ValueError(f"channel must be one of {', '.join(_CHANNELS)}, got {channel!r}")
        if default_on_timeout not in (None, "approve", "reject"):
            raise ValueError("default_on_timeout must be 'approve' or 'reject'")
        if on_timeout not in (None, "approve", "reject", "none"):
            raise ValueError("on_timeout must be 'reject', 'approve' or 'none'")
        if on_timeout is not None and default_on_timeout not in (None, on_timeout):
            raise ValueError("give on_timeout or default_on_timeout (its older name), not both")
        if allow_edit or allow_respond:
            raise ValueError(
                "allow_edit and allow_respond are no longer offered: an approval request is "
                "about the action as asked (its digest binds the decision); ask again with "
                "the new arguments instead"
            )
        if wait_time is None:
            raise ValueError("wait_time is required: an approval waits for its answer")
        self.wait_time = cast(float, check_wait_time(wait_time))
        self.follow_up_time = check_follow_up_time(follow_up_time)
        self._client: HumanWire | None = None
        self._async_client: AsyncHumanWire | None = async_client
        if client is not None:
            if _is_async_client(client):
                self._async_client = cast("AsyncHumanWire", client)
            else:
                self._client = cast("HumanWire", client)
        if sum(given is not None for given in (to, approvers, person)) > 1:
            raise ValueError(
                "give to= (one recipient), person= (a person of the people directory) or "
                "approvers= (several), not two of them"
            )
        if person is not None:
            approvers = [{"person": person}]
        if approvers is not None:
            listed = [_approver_dict(a) for a in approvers]
            if not listed:
                raise ValueError("approvers needs at least one approver")
            self.approvers: list[dict[str, str]] = listed
            # A person given alone: named by their id until the service picks the address.
            first = listed[0]
            self.channel: Channel = cast(Channel, first.get("channel", "person"))
            self.to = first.get("to") or first["person"]
        else:
            self.channel = channel
            self.to = resolve_recipient(channel, to, client or async_client)
            self.approvers = [{"channel": channel, "to": self.to}]
        self.quorum = quorum
        self.reject_quorum = reject_quorum
        self.escalation = (
            None if escalation is None else [_escalation_dict(tier) for tier in escalation]
        )
        self.remind_every = remind_every
        self.on_timeout: OnTimeout = on_timeout or default_on_timeout or "reject"
        self.allow_comment = allow_comment
        self.allow_edit = False
        self.allow_respond = False
        # Refuse a request the service would refuse, now rather than at the first action.
        self.approval_kwargs(ApprovalRequest("check"), idempotency_key=None, validate=True)

    @property
    def default_on_timeout(self) -> Literal["approve", "reject"]:
        """What a timeout decides, as the older name says it (``none`` is a rejection)."""
        return "approve" if self.on_timeout == "approve" else "reject"

    @property
    def client(self) -> HumanWire:
        """The sync client: the one given, else one on the async client's account."""
        from ._client import sync_client_for

        self._client = sync_client_for(self._client, self._async_client)
        return self._client

    @property
    def async_client(self) -> AsyncHumanWire:
        """The async client: the one given, else one on the sync client's account."""
        from ._client import async_client_for

        self._async_client = async_client_for(self._client, self._async_client)
        return self._async_client

    def approval_kwargs(
        self,
        request: ApprovalRequest,
        *,
        wait: bool = True,
        window: float | None = None,
        idempotency_key: str | None = None,
        metadata: Mapping[str, str] | None = None,
        validate: bool = False,
    ) -> dict[str, Any]:
        """The keyword arguments of ``client.approvals.create(...)`` for ``request``.

        ``wait=False`` sends without holding the request (open for ``window`` seconds,
        else ``follow_up_time``, else 90), for approvals resumed by a webhook."""
        title = f"Approve {request.action}?"
        if len(title) > _MAX_TITLE_CHARS:
            title = title[: _MAX_TITLE_CHARS - 2] + "…?"
        kwargs: dict[str, Any] = {
            "title": title,
            "description": request.description or f"An AI agent asks to run {request.action}.",
            "action": action_of(request),
            "approvers": [dict(a) for a in self.approvers],
            "quorum": self.quorum,
            "reject_quorum": self.reject_quorum,
            "escalation": self.escalation,
            "remind_every": self.remind_every,
            "on_timeout": self.on_timeout,
            "allow_comment": self.allow_comment,
        }
        if wait:
            kwargs["wait_time"] = self.wait_time
            # Without a follow-up window of its own, the request closes a second after
            # the hold (the service would keep it open 90 s): the timeout is then the
            # service's decision (``on_timeout``), consumable like any other.
            kwargs["follow_up_time"] = self.follow_up_time or _CLOSE_AFTER_HOLD
        else:
            kwargs["follow_up_time"] = window or self.follow_up_time or 90
        if idempotency_key is not None:
            kwargs["idempotency_key"] = idempotency_key
        if metadata:
            kwargs["metadata"] = dict(metadata)
        if validate:
            _check_request(kwargs)
        return kwargs

    def form_request(self, request: ApprovalRequest, **options: Any) -> dict[str, Any]:
        """Gone with the approval forms: :meth:`approval_kwargs` builds the request now."""
        raise TypeError(
            "Approver.form_request is gone: approvals are sent as approval requests "
            "(Approver.approval_kwargs gives client.approvals.create's arguments)"
        )

    def send(
        self,
        request: ApprovalRequest,
        *,
        wait: bool = True,
        idempotency_key: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Approval:
        """Send the approval request; with ``wait`` hold until decided or ``wait_time``."""
        kwargs = self.approval_kwargs(
            request, wait=wait, idempotency_key=idempotency_key, metadata=metadata
        )
        return self.client.approvals.create(**kwargs)

    async def asend(
        self,
        request: ApprovalRequest,
        *,
        wait: bool = True,
        idempotency_key: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Approval:
        """:meth:`send` on the async client."""
        kwargs = self.approval_kwargs(
            request, wait=wait, idempotency_key=idempotency_key, metadata=metadata
        )
        return await self.async_client.approvals.create(**kwargs)

    def decided(self, approval: Approval, client: HumanWire | None = None) -> ApprovalDecision:
        """The decision a held request came back with. Still open after the hold: when
        this approver sends no ``follow_up_time`` the request closes a second later and
        the service's timeout decision is read (on ``client``, else the approver's);
        otherwise (it stays open) not approved, as a timeout that says so."""
        found = decision_from_approval(approval)
        if found is None and self.follow_up_time is None:
            reader = client if client is not None else self.client
            closed = reader.approvals.wait(approval.interaction_id, timeout=_CLOSING_WAIT)
            found = decision_from_approval(closed)
        return found or _open_after_hold(approval)

    async def adecided(
        self, approval: Approval, client: AsyncHumanWire | None = None
    ) -> ApprovalDecision:
        """:meth:`decided` on the async client."""
        found = decision_from_approval(approval)
        if found is None and self.follow_up_time is None:
            reader = client if client is not None else self.async_client
            closed = await reader.approvals.wait(approval.interaction_id, timeout=_CLOSING_WAIT)
            found = decision_from_approval(closed)
        return found or _open_after_hold(approval)

    def request(
        self,
        request: ApprovalRequest,
        *,
        idempotency_key: str | None = None,
        metadata: Mapping[str, str] | None = None,
        consume: bool = True,
    ) -> ApprovalDecision:
        """Ask and block until the people decide or ``wait_time`` passes; approved (and
        ``consume``), consume the approval for ``request``'s action: call it right before
        the action runs. A decision of kind ``consumed`` means it ran already."""
        approval = self.send(request, idempotency_key=idempotency_key, metadata=metadata)
        decision = self.decided(approval)
        return self.consume(decision, request) if consume else decision

    async def arequest(
        self,
        request: ApprovalRequest,
        *,
        idempotency_key: str | None = None,
        metadata: Mapping[str, str] | None = None,
        consume: bool = True,
    ) -> ApprovalDecision:
        """:meth:`request` on the async client."""
        approval = await self.asend(request, idempotency_key=idempotency_key, metadata=metadata)
        decision = await self.adecided(approval)
        return await self.aconsume(decision, request) if consume else decision

    def consume(self, decision: ApprovalDecision, request: ApprovalRequest) -> ApprovalDecision:
        """Use an approved ``decision`` for ``request``'s action, once (``POST
        /approvals/{id}/consume`` with its digest): the decision itself the first time;
        of kind ``consumed`` (not approved) when it was used already; a rejection when
        the service says it is not approved. Anything not approved is returned as is."""
        from .errors import AlreadyConsumedError, NotApprovedError

        if not decision.approved or not decision.interaction_id:
            return decision
        try:
            self.client.approvals.consume(
                decision.interaction_id, action_digest=action_digest_of(request)
            )
        except AlreadyConsumedError:
            return consumed_decision(decision)
        except NotApprovedError as exc:
            return _not_approved(decision, exc.message)
        return decision

    async def aconsume(
        self, decision: ApprovalDecision, request: ApprovalRequest
    ) -> ApprovalDecision:
        """:meth:`consume` on the async client."""
        return await consume_approval(self.async_client, decision, request)


async def consume_approval(
    client: AsyncHumanWire, decision: ApprovalDecision, request: ApprovalRequest
) -> ApprovalDecision:
    """:meth:`Approver.consume` on ``client``, for code that holds no approver."""
    from .errors import AlreadyConsumedError, NotApprovedError

    if not decision.approved or not decision.interaction_id:
        return decision
    try:
        await client.approvals.consume(
            decision.interaction_id, action_digest=action_digest_of(request)
        )
    except AlreadyConsumedError:
        return consumed_decision(decision)
    except NotApprovedError as exc:
        return _not_approved(decision, exc.message)
    return decision


_CHANNELS = ("sms", "whatsapp", "slack", "email", "call", "link", "telegram")
_CLOSE_AFTER_HOLD = 1.0
"""``followUpTime`` of a held request whose approver sets none: it closes right after."""
_CLOSING_WAIT = 15.0
"""How long a held request's caller waits for it to close after the hold."""


def _check_request(kwargs: Mapping[str, Any]) -> None:
    """Refuse what ``POST /approvals`` would: the typed 400 the service would answer."""
    from pydantic import ValidationError
    from pydantic.alias_generators import to_camel

    from .errors import error_from_validation
    from .types.approvals import ApprovalRequest as WireRequest

    body = {
        to_camel(name): value
        for name, value in kwargs.items()
        if value is not None and name != "idempotency_key"
    }
    try:
        WireRequest.model_validate(body)
    except ValidationError as exc:
        raise error_from_validation(exc) from None


def _approver_dict(approver: Mapping[str, str] | ApproverSpec) -> dict[str, str]:
    """The approver's wire keys (``channel`` and ``to``, or ``person``, or all three)."""
    if isinstance(approver, Mapping):
        found = {key: approver.get(key) for key in ("channel", "to", "person")}
    else:
        found = {"channel": approver.channel, "to": approver.to, "person": approver.person}
    return {key: str(value) for key, value in found.items() if value is not None}


def _escalation_dict(tier: Mapping[str, Any] | Escalation) -> dict[str, Any]:
    if isinstance(tier, Mapping):
        return {
            "after": tier.get("after"),
            "approvers": [_approver_dict(a) for a in tier.get("approvers") or ()],
        }
    return {"after": tier.after, "approvers": [_approver_dict(a) for a in tier.approvers]}


def _is_async_client(client: object) -> bool:
    from ._client import AsyncHumanWire

    return isinstance(client, AsyncHumanWire)
