"""Framework-neutral human approval: ask a person, by form, whether an action may run.

The adapters (``humanwire.langchain``, ``humanwire.llama_index``) build on this module; it
uses only the core client and imports no agent framework.

- :class:`ApprovalRequest` is what needs approving: an action name, its arguments and an
  optional description.
- :func:`build_approval_form` turns it into a form: a required ``decision`` select
  (approve / reject, plus edit / respond when allowed), an optional ``comment`` and, when
  editing is allowed, an ``arguments`` textarea showing the current arguments as JSON.
- :func:`decision_from_values` reads a submission (from the HTTP response, a
  ``form.received`` webhook or the interaction status) back into an :class:`ApprovalDecision`.
- :class:`Approver` sends the form and blocks (``request``) or awaits (``arequest``) until
  it comes back.

Decisions this module makes:

- A timeout is not a rejection. When nobody answers within ``wait_time`` the decision is
  ``decision="timeout"``, ``timed_out=True``, and ``approved`` follows
  ``default_on_timeout`` ("reject" unless told otherwise).
- An ``edit`` whose arguments are left empty approves the original arguments. An edit
  whose arguments are not a JSON object is treated as a rejection (the action never runs
  with arguments nobody could read), and the comment says why.
- A ``respond`` decision does not run the action: the comment is the human's answer.
- An unknown decision value is a rejection: approval fails closed.
- The recipient comes from ``to``, else ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` /
  ``HUMANWIRE_SLACK_TO``, else, on the embedded service (no base URL, or a loopback one),
  the inbox's default human; otherwise a ``ValueError`` names the variable to set.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlsplit

from .types import FieldOption, FormField, FormResponse

if TYPE_CHECKING:
    from ._client import AsyncHumanWire, HumanWire

__all__ = [
    "MESSAGE_RECIPIENT_ENV",
    "RECIPIENT_ENV",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "Channel",
    "DecisionKind",
    "build_approval_form",
    "check_follow_up_time",
    "check_wait_time",
    "decision_from_response",
    "decision_from_values",
    "default_recipient",
    "format_arguments",
    "is_local_service",
    "resolve_recipient",
    "timeout_decision",
]

Channel = Literal["sms", "whatsapp", "slack"]
DecisionKind = Literal["approve", "reject", "edit", "respond", "timeout"]

RECIPIENT_ENV: dict[str, str] = {
    "sms": "HUMANWIRE_SMS_TO",
    "whatsapp": "HUMANWIRE_WHATSAPP_TO",
    "slack": "HUMANWIRE_SLACK_TO",
}
"""The environment variable holding each channel's default recipient."""
MESSAGE_RECIPIENT_ENV: dict[str, str] = {"email": "HUMANWIRE_EMAIL_TO"}
"""The same for channels the message tools reach but approvals do not (yet)."""

DEFAULT_APPROVAL_WAIT_TIME = 300
_MAX_VALUE_CHARS = 500
_MAX_TITLE_CHARS = 120


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
    from .types.sandbox import DEFAULT_HUMAN_EMAIL, DEFAULT_HUMAN_PHONE, DEFAULT_HUMAN_SLACK

    if channel == "email":
        return DEFAULT_HUMAN_EMAIL
    return DEFAULT_HUMAN_SLACK if channel == "slack" else DEFAULT_HUMAN_PHONE


def resolve_recipient(channel: str, to: str | None = None, client: object | None = None) -> str:
    """``to``, else the channel's environment variable, else (embedded service) the default
    human. Raises ``ValueError`` naming the variable to set when none applies."""
    if to:
        return to
    variable = RECIPIENT_ENV.get(channel) or MESSAGE_RECIPIENT_ENV.get(channel)
    if variable is None:
        raise ValueError(f"unknown channel {channel!r}: use one of sms, whatsapp, slack, email")
    from_env = os.environ.get(variable, "").strip()
    if from_env:
        return from_env
    if is_local_service(client):
        return default_recipient(channel)
    raise ValueError(
        f"no {channel} recipient: pass to=... or set {variable} "
        "(the embedded service's default human applies only without HUMANWIRE_BASE_URL)"
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

    @property
    def text(self) -> str:
        """A sentence for an agent or a log: who decided what, and why."""
        comment = f": {self.comment}" if self.comment else ""
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


# --- the approver ---------------------------------------------------------------------


class Approver:
    """Sends approval forms to one person and waits for the decision.

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
        wait_time: float = DEFAULT_APPROVAL_WAIT_TIME,
        follow_up_time: float | None = None,
        default_on_timeout: Literal["approve", "reject"] = "reject",
        allow_edit: bool = False,
        allow_respond: bool = False,
    ) -> None:
        if channel not in RECIPIENT_ENV:
            raise ValueError(f"channel must be sms, whatsapp or slack, got {channel!r}")
        if default_on_timeout not in ("approve", "reject"):
            raise ValueError("default_on_timeout must be 'approve' or 'reject'")
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
        self.channel: Channel = channel
        self.to = resolve_recipient(channel, to, client or async_client)
        self.default_on_timeout: Literal["approve", "reject"] = default_on_timeout
        self.allow_edit = allow_edit
        self.allow_respond = allow_respond

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

    def form_request(
        self,
        request: ApprovalRequest,
        *,
        allow_edit: bool | None = None,
        allow_respond: bool | None = None,
        wait: bool = True,
        idempotency_key: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``client.forms.<channel>(...)`` for ``request``.

        ``wait=False`` sends without holding the request (only the follow-up window, 90 s
        unless ``follow_up_time`` says otherwise), for approvals resumed by a webhook.
        """
        title, fields = build_approval_form(
            request,
            allow_edit=self.allow_edit if allow_edit is None else allow_edit,
            allow_respond=self.allow_respond if allow_respond is None else allow_respond,
        )
        description = request.description or f"An AI agent asks to run {request.action}."
        kwargs: dict[str, Any] = {
            "to": self.to,
            "title": title,
            "fields": fields,
            "description": description,
            "submit_label": "Send decision",
        }
        if wait:
            kwargs["wait_time"] = self.wait_time
            if self.follow_up_time is not None:
                kwargs["follow_up_time"] = self.follow_up_time
        else:
            kwargs["follow_up_time"] = self.follow_up_time or 90
        if idempotency_key is not None:
            kwargs["idempotency_key"] = idempotency_key
        if metadata:
            kwargs["metadata"] = dict(metadata)
        return kwargs

    def send(
        self,
        request: ApprovalRequest,
        *,
        wait: bool = True,
        idempotency_key: str | None = None,
        allow_edit: bool | None = None,
        allow_respond: bool | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> FormResponse:
        """Send the approval form; with ``wait`` hold until it is submitted or times out."""
        kwargs = self.form_request(
            request,
            allow_edit=allow_edit,
            allow_respond=allow_respond,
            wait=wait,
            idempotency_key=idempotency_key,
            metadata=metadata,
        )
        send = getattr(self.client.forms, self.channel)
        return cast(FormResponse, send(**kwargs))

    async def asend(
        self,
        request: ApprovalRequest,
        *,
        wait: bool = True,
        idempotency_key: str | None = None,
        allow_edit: bool | None = None,
        allow_respond: bool | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> FormResponse:
        kwargs = self.form_request(
            request,
            allow_edit=allow_edit,
            allow_respond=allow_respond,
            wait=wait,
            idempotency_key=idempotency_key,
            metadata=metadata,
        )
        send = getattr(self.async_client.forms, self.channel)
        return cast(FormResponse, await send(**kwargs))

    def request(
        self,
        request: ApprovalRequest,
        *,
        idempotency_key: str | None = None,
        allow_edit: bool | None = None,
        allow_respond: bool | None = None,
    ) -> ApprovalDecision:
        """Ask and block until the human decides or ``wait_time`` passes."""
        response = self.send(
            request,
            idempotency_key=idempotency_key,
            allow_edit=allow_edit,
            allow_respond=allow_respond,
        )
        return decision_from_response(response, default_on_timeout=self.default_on_timeout)

    async def arequest(
        self,
        request: ApprovalRequest,
        *,
        idempotency_key: str | None = None,
        allow_edit: bool | None = None,
        allow_respond: bool | None = None,
    ) -> ApprovalDecision:
        """:meth:`request` on the async client."""
        response = await self.asend(
            request,
            idempotency_key=idempotency_key,
            allow_edit=allow_edit,
            allow_respond=allow_respond,
        )
        return decision_from_response(response, default_on_timeout=self.default_on_timeout)


def _is_async_client(client: object) -> bool:
    from ._client import AsyncHumanWire

    return isinstance(client, AsyncHumanWire)
