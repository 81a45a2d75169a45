"""Approval requests (``POST /approvals``): a decision asked of one or more people, over
any channel, about one action; the record it builds; ``consume``; the audit log.

The rules a request must meet are checked here, so the client refuses a bad request
before it is sent and the service answers 400 naming the field (docs/design.md
"Approval requests"):

* approvers (the first ones and every escalation tier's, together) are 1 to
  ``MAX_APPROVERS``, no two alike (the same channel and address);
* ``quorum`` and ``rejectQuorum`` are at most the number of distinct *people* among
  them: the sms, whatsapp and call approvers of one number are one person (their
  decisions count once);
* escalation tiers come at increasing ``after``;
* ``waitTime``, ``followUpTime`` or both.

``action_digest`` is the digest that binds a decision to its action: ``sha256:`` and the
hex digest of the action's canonical JSON (RFC 8785: sorted keys, no spaces, UTF-8,
numbers as ECMAScript writes them), so a client in any language computes the same one.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    ConfigDict,
    Field,
    PlainValidator,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ._base import (
    DISCORD_ID_SCHEMA,
    E164_SCHEMA,
    SLACK_ID_SCHEMA,
    TEAMS_ID_SCHEMA,
    TELEGRAM_CHAT_SCHEMA,
    WAIT_OR_FOLLOW_UP_SCHEMA,
    FollowUpTime,
    RequestModel,
    ResponseModel,
    Timestamp,
    WaitTime,
    check_discord_id,
    check_e164,
    check_slack_id,
    check_teams_id,
    check_telegram_chat_id,
    no_default,
)
from ._metadata import Metadata
from .people import PersonInsteadOfTo

__all__ = [
    "ACTION_DIGEST",
    "MAX_APPROVERS",
    "Approval",
    "ApprovalAction",
    "ApprovalDecision",
    "ApprovalList",
    "ApprovalOutcome",
    "ApprovalRequest",
    "Approver",
    "ApproverChannel",
    "ApproverDecision",
    "ApproverLink",
    "AuditEntry",
    "AuditEntryType",
    "AuditPage",
    "ConsumeRequest",
    "ConsumeResponse",
    "DecisionVia",
    "Escalation",
    "OnTimeout",
    "action_digest",
    "person_of",
]

MAX_APPROVERS = 20
"""Approvers of one request, escalation tiers included."""

ApproverChannel = Literal[
    "sms", "whatsapp", "slack", "email", "call", "link", "telegram", "discord", "teams"
]
"""How an approver is asked. ``link``: nothing is sent; the approver's page comes back in
the response (``links``) for the caller to hand over."""

ApprovalDecision = Literal["approve", "reject"]
"""One approver's decision."""
ApprovalOutcome = Literal["approved", "rejected"]
"""What the decisions settled (``Approval.decision``)."""
OnTimeout = Literal["reject", "approve", "none"]
DecisionVia = Literal[
    "sms_reply",
    "whatsapp_reply",
    "whatsapp_button",
    "slack_button",
    "telegram_button",
    "discord_button",
    "teams_button",
    "page",
    "email_link",
    "email_reply",
    "call_keypad",
    "call_speech",
    "inbox",
    "console",
    "grant",
    "sandbox",
]
"""How a decision came in (``whatsapp_button``: a WhatsApp reply button pressed, on Meta's
Cloud API; ``inbox``: the embedded service's inbox, playing an approver;
``console``: the person, signed in to the approvers' console; ``grant``: a standing
approval covered the action (``grantId`` names it, ``approver`` is the person who granted it);
``sandbox``: the sandbox API, playing one, whatever the approver's channel)."""

ACTION_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")

_PHONE_CHANNELS = ("sms", "whatsapp", "call")
_NAME = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"
"""A ``link`` approver's name: printable, not blank."""


def _invalid(message: str, field: str | None = None) -> PydanticCustomError:
    return PydanticCustomError("invalid_request", message, {"field": field} if field else None)


def action_digest(action: Any) -> str:
    """``sha256:`` + the hex digest of ``action``'s canonical JSON (RFC 8785). ``action``
    is what the request's ``action`` holds (``{"name": …, "arguments": {…}}``) as plain
    JSON values; ``ValueError`` for what JSON cannot hold (NaN, an infinity, a set)."""
    import rfc8785  # lazily: only approvals need it

    try:
        canonical = rfc8785.dumps(action)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise ValueError(f"the action is not plain JSON: {exc}") from None
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


_TO_BY_CHANNEL: list[Any] = [
    {"required": ["channel"], "properties": {"channel": channels, "to": to}}
    for channels, to in (
        ({"enum": list(_PHONE_CHANNELS)}, E164_SCHEMA),
        ({"const": "slack"}, SLACK_ID_SCHEMA),
        ({"const": "telegram"}, TELEGRAM_CHAT_SCHEMA),
        ({"const": "discord"}, DISCORD_ID_SCHEMA),
        ({"const": "teams"}, TEAMS_ID_SCHEMA),
        ({"const": "email"}, {"type": "string", "format": "email"}),
        ({"const": "link"}, {"type": "string", "pattern": _NAME}),
    )
]
"""An approver's ``to`` on each channel, as the schema says it."""


class Approver(RequestModel):
    """Who is asked, and how: ``to`` is a number (E.164) for ``sms``, ``whatsapp`` and
    ``call``; a Slack member id for ``slack``; a chat id for ``telegram``; a user id for
    ``discord``; a Teams user id (``29:…``) for ``teams``; an email address for
    ``email``; a name the caller chooses for ``link`` (shown on the page and in the
    decisions)."""

    # What ``_check_to`` enforces, said to the schema too (an email address beyond its
    # ``@`` and a valid number beyond its pattern JSON Schema cannot say). The shape of
    # ``to`` per channel is one ``anyOf`` of channels, not an ``if`` per channel: each
    # ``if`` doubles the branches a generator from the schema (schemathesis) explores,
    # and seven of them beside the person rule pass its budget. Without ``channel``, the
    # approver is a person alone (no ``to``).
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {"anyOf": [*_TO_BY_CHANNEL, {"required": ["person"], "maxProperties": 1}]},
                {"anyOf": [{"required": ["channel", "to"]}, {"required": ["person"]}]},
                # A person's approver asked on a channel names no link (a name, not them).
                {
                    "if": {"required": ["person"], "not": {"required": ["to"]}},
                    "then": {
                        "not": {
                            "properties": {"channel": {"const": "link"}},
                            "required": ["channel"],
                        }
                    },
                },
            ]
        }
    )

    channel: Annotated[
        ApproverChannel | None, WithJsonSchema({"enum": list(get_args(ApproverChannel))})
    ] = Field(default=None, json_schema_extra=no_default)
    to: Annotated[
        str | None,
        Field(min_length=1, max_length=254),
        WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 254}),
    ] = Field(default=None, json_schema_extra=no_default)
    person: PersonInsteadOfTo = None
    """A person of the people directory, in place of ``channel`` and ``to`` (asked on
    their first confirmed address an approver can be asked on; with ``channel``, on
    that channel). In a request as stored and in its decisions: the person the address
    is of, beside it. Their addresses count as one approver toward a quorum."""

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # An approver is written as given: channel and to, person, or the three (an
        # absent part is left out, never null: the wire refuses null).
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None}

    @model_validator(mode="after")
    def _check_to(self) -> Approver:
        if self.channel is None and self.to is None:
            if self.person is None:
                raise _invalid("channel and to are required (or person in their place)", "to")
            return self
        if self.channel is None:
            raise _invalid("channel is required with to", "channel")
        if self.to is None:
            if self.person is None:
                raise _invalid("to is required (or person in its place)", "to")
            if self.channel == "link":
                raise _invalid("a link approver is a name in to, not a person", "person")
            return self
        if self.channel in _PHONE_CHANNELS:
            try:
                check_e164(self.to)
            except PydanticCustomError:
                raise _invalid(
                    f"to must be a phone number in E.164 form for {self.channel}", "to"
                ) from None
        elif self.channel == "slack":
            try:
                check_slack_id(self.to)
            except PydanticCustomError:
                raise _invalid(
                    "to must be a Slack member id such as U0123ABCD for slack", "to"
                ) from None
        elif self.channel == "telegram":
            try:
                check_telegram_chat_id(self.to)
            except PydanticCustomError:
                raise _invalid("to must be a Telegram chat id such as 123456789", "to") from None
        elif self.channel == "discord":
            try:
                check_discord_id(self.to)
            except PydanticCustomError:
                raise _invalid(
                    "to must be a Discord user id such as 80351110224678912", "to"
                ) from None
        elif self.channel == "teams":
            try:
                check_teams_id(self.to)
            except PydanticCustomError:
                raise _invalid("to must be a Teams user id such as 29:1a2b3c", "to") from None
        elif self.channel == "email":
            from email_validator import EmailNotValidError, validate_email

            try:
                validate_email(self.to, check_deliverability=False)
            except EmailNotValidError as exc:
                raise _invalid(f"to must be an email address for email ({exc})", "to") from None
        elif not self.to.strip() or any(ord(c) < 32 or ord(c) == 127 for c in self.to):
            raise _invalid("to must be a name (printable, not blank) for link", "to")
        return self


def person_of(approver: Approver) -> tuple[str, str]:
    """Who an approver is, for counting: the person of the people directory when one is
    named (however many of their addresses are listed), else the number for sms,
    whatsapp and call (one person, however reached), the channel and address otherwise
    (an email address is compared without case)."""
    if approver.person is not None:
        return ("person", approver.person)
    assert approver.channel is not None and approver.to is not None  # by _check_to
    if approver.channel in _PHONE_CHANNELS:
        return ("phone", approver.to)
    if approver.channel == "email":
        return ("email", approver.to.lower())
    return (approver.channel, approver.to)


def _address_key(approver: Approver) -> tuple[str, str]:
    """Where an approver is asked, for finding one listed twice: the channel and address
    (an email address without case), or the person not yet given an address."""
    if approver.channel is None or approver.to is None:
        return ("person", approver.person or "")
    to = approver.to.lower() if approver.channel == "email" else approver.to
    return (approver.channel, to)


class ApprovalAction(RequestModel):
    """The action a decision is about: shown readably to approvers; its digest binds
    the decision (``actionDigest``)."""

    name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Escalation(RequestModel):
    """Approvers asked too when the request is still undecided ``after`` seconds from its
    start (the earlier ones can still answer)."""

    # At most the longest the windows can run (waitTime 600 + followUpTime 60000).
    after: Annotated[float, Field(gt=0, le=60600)]
    approvers: list[Approver] = Field(min_length=1, max_length=MAX_APPROVERS)


def _check_comment_flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _invalid("allowComment must be true or false")
    return value


class ApprovalRequest(RequestModel):
    """``POST /approvals``."""

    model_config = ConfigDict(json_schema_extra=WAIT_OR_FOLLOW_UP_SCHEMA)

    title: str = Field(min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=4000)
    action: ApprovalAction | None = None
    approvers: list[Approver] = Field(min_length=1, max_length=MAX_APPROVERS)
    quorum: Annotated[int, Field(ge=1, le=MAX_APPROVERS)] = 1
    reject_quorum: Annotated[int, Field(ge=1, le=MAX_APPROVERS)] | None = None
    escalation: list[Escalation] | None = Field(default=None, max_length=MAX_APPROVERS)
    remind_every: Annotated[float, Field(ge=1, le=60000)] | None = None
    wait_time: WaitTime | None = None
    follow_up_time: FollowUpTime | None = None
    on_timeout: OnTimeout = "reject"
    allow_comment: Annotated[
        bool, PlainValidator(_check_comment_flag), WithJsonSchema({"type": "boolean"})
    ] = True
    metadata: Metadata | None = None

    @model_validator(mode="after")
    def _check_approvers(self) -> ApprovalRequest:
        seen: dict[tuple[str, str], str] = {}
        people: set[tuple[str, str]] = set()
        for path, approver in self.all_approvers_with_paths():
            key = _address_key(approver)
            if key in seen:
                raise _invalid(f"{path} is the same approver as {seen[key]}", path)
            seen[key] = path
            people.add(person_of(approver))
        if len(seen) > MAX_APPROVERS:
            raise _invalid(
                f"{len(seen)} approvers with the escalation tiers; at most {MAX_APPROVERS}",
                "escalation",
            )
        if self.quorum > len(people):
            raise _invalid(
                f"quorum is {self.quorum} but the approvers are {len(people)} "
                f"{'person' if len(people) == 1 else 'different people'}",
                "quorum",
            )
        if self.reject_quorum is not None and self.reject_quorum > len(people):
            raise _invalid(
                f"rejectQuorum is {self.reject_quorum} but the approvers are {len(people)} "
                f"{'person' if len(people) == 1 else 'different people'}",
                "rejectQuorum",
            )
        previous = 0.0
        for index, tier in enumerate(self.escalation or ()):
            if tier.after <= previous:
                raise _invalid(
                    "escalation tiers must come at increasing after (seconds from the start)",
                    f"escalation[{index}].after",
                )
            previous = tier.after
        if self.wait_time is None and self.follow_up_time is None:
            raise _invalid("an approval needs waitTime, followUpTime or both", "waitTime")
        if self.action is not None:
            try:
                action_digest(self.action.model_dump())
            except ValueError as exc:
                raise _invalid(str(exc), "action.arguments") from None
        return self

    def all_approvers_with_paths(self) -> list[tuple[str, Approver]]:
        """Every approver with its path in the request: the first ones, then each
        escalation tier's."""
        found = [(f"approvers[{i}]", approver) for i, approver in enumerate(self.approvers)]
        for t, tier in enumerate(self.escalation or ()):
            found += [(f"escalation[{t}].approvers[{i}]", a) for i, a in enumerate(tier.approvers)]
        return found

    @property
    def action_digest(self) -> str | None:
        """The digest that binds the decision (None without an ``action``)."""
        return None if self.action is None else action_digest(self.action.model_dump())


class ApproverDecision(ResponseModel):
    """One approver's decision, as recorded."""

    approver: Approver
    decision: ApprovalDecision
    comment: str | None = None
    at: Timestamp
    via: DecisionVia | str
    """A ``DecisionVia`` (a newer service may name more ways)."""
    grant_id: str | None = None
    """With ``via: "grant"``: the standing approval that decided."""
    on_behalf_of: str | None = None
    """The person (``per_…``) the approver decided for: asked in their place while they
    were away (an out-of-office delegation to them)."""


class ApproverLink(ResponseModel):
    """The page of a ``link`` approver (nothing is sent to them)."""

    to: str
    url: str


class Approval(ResponseModel):
    """An approval request: what ``POST /approvals`` returns (held, or at once) and what
    ``GET /approvals/{interactionId}`` reads.

    ``decision`` is None while pending (and when the windows closed undecided with
    ``onTimeout: none``); ``response`` is the text for a model ("Approved by +1202… (2 of
    2).", "No decision in time: rejected by default.").
    """

    interaction_id: str
    status: Literal["pending", "ended"]
    decision: ApprovalOutcome | None = None
    timed_out: bool = False
    decisions: list[ApproverDecision] = Field(default_factory=list)
    action_digest: str | None = None
    approval_url: str | None = None
    """The page of the first ``link`` approver (``links`` has each one's)."""
    links: list[ApproverLink] = Field(default_factory=list)
    response: str | None = None
    metadata: dict[str, str] | None = None


class ApprovalList(ResponseModel):
    """``GET /approvals``: the account's requests past ``after`` that the filters keep, in
    the order they were made, and the cursor to continue from (the last one's, or
    ``after`` when none came: a later page finds the requests made since)."""

    approvals: list[Approval]
    cursor: str


class ConsumeRequest(RequestModel):
    """``POST /approvals/{interactionId}/consume``: the digest of the action about to run
    (the request's ``actionDigest``; null or left out for a request without an action)."""

    action_digest: Annotated[str, Field(pattern=ACTION_DIGEST.pattern, max_length=71)] | None = None


class ConsumeResponse(ResponseModel):
    """200 the first time an approved request is consumed with its digest; later calls
    are 409 ``already_consumed``."""

    consumed: bool


AuditEntryType = Literal[
    "approval.requested",
    "approval.asked",
    "approval.reminded",
    "approval.escalated",
    "approval.decision",
    "approval.decision_refused",
    "approval.decided",
    "approval.timed_out",
    "approval.consumed",
    "approval.grant_created",
    "approval.grant_revoked",
    "approval.claimed",
    "approval.claim_released",
    "approval.reassigned",
    "approval.delegated",
    "message.fallback",
]
"""What an audit entry records: the request; an approver asked (at the start or by an
escalation tier); a reminder sent; a tier escalated to; one approver's decision; a
decision refused (``data.reason``: ``closed``, the request settled or ended, or the
approver's tier not asked yet; ``decided_before``, this person's first decision stands);
the request decided; its windows closed undecided; its action consumed; a standing
approval made (its ``interactionId`` is the grant's id; ``actor`` the person who made it
from the console, null when the account's key did; ``data``: ``grantId``, ``actionName``,
``match``, ``expiresAt``, ``grantedBy``, ``via``: ``console`` or ``api``) or revoked (the
same, ``actor`` the person who revoked it; ``data``: ``grantId``, ``actionName``,
``grantedBy``, ``via``); an approver's claim of it
in the console ("I'm on it", ``data.person``) and its release; an approver's place handed
to another person (``data.from``, ``data.to``), or to their delegate while they are away
(``approval.delegated``, the same data); a message to a person moved
to their next address (``fallbackAfter``)."""


class AuditEntry(ResponseModel):
    """One entry of an account's audit log. Entries are hash-chained: ``hash`` is
    ``sha256:`` + the hex digest of ``prev`` and the entry's canonical JSON, so an edited
    or removed entry breaks the chain (``humanwire audit verify``)."""

    sequence: int
    """1, 2, 3… in the account's log, with no gaps."""
    at: Timestamp
    type: AuditEntryType | str
    interaction_id: str
    actor: Approver | None = None
    """The approver the entry is about, if one is."""
    data: dict[str, Any] = Field(default_factory=dict)
    prev: str
    hash: str


class AuditPage(ResponseModel):
    """``GET /audit?after=<cursor>&limit=``: entries in order; ``next`` is the cursor of
    the following page (None at the end of the log, for now)."""

    entries: list[AuditEntry]
    next: str | None = None
