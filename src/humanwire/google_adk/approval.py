"""Human approval of tool calls on ADK's own seam: the tool confirmation.

:func:`require_approval` wraps any ADK tool (or plain function) in an
:class:`ApprovalGate`, a ``BaseTool`` of the same name, description and declaration whose
call asks a person through humanwire before the wrapped tool runs. Two ways to wait:

- **Paused** (the default): the gate sends the approval form (no held request; open for
  the approver's ``follow_up_time``, default one hour) and asks ADK for a confirmation by
  hand, ``tool_context.request_confirmation(hint=..., payload=...)`` with
  ``skip_summarization``: the run stops at an ``adk_request_confirmation`` call and the
  session (ADK's session service) holds the pause. The host answers that call when the
  ``form.received`` webhook arrives, in any process (:mod:`humanwire.google_adk.durable`),
  and ADK calls the gate again, which reads the decision from the service.
- **In process** (``wait=True``): the gate sends the form and awaits the decision on the
  service itself (the status long-poll, 60 s a request), then runs the tool or answers
  the rejection. ADK runs tool calls as tasks on its event loop and sets no time limit on
  them, so the run simply waits; parallel calls ask at the same time.

By hand rather than ADK's ``require_confirmation``: ADK answers a rejection with the fixed
``{'error': 'This tool call is rejected.'}``, and the human's comment would be lost. The
gate answers a call that does not run with ``{"error": <why, with the comment>}``, ADK's
shape for a rejected confirmation.

The decision always comes from the service: an answer to the confirmation only wakes the
call. Anyone who can post to the session could answer ``{"confirmed": true}`` (the end
user of a chat, for one); the gate runs the tool only when the approval form it sent was
approved (or expired with ``default_on_timeout="approve"``).
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from humanwire._pauses import (
    RESUME_KEY,
    LazyApprover,
    PendingApproval,
    approver_source,
    denial_text,
    idempotency_key,
    metadata_value,
    read_decision,
    reuse_parts,
    send_pending_approval,
    wait_for_decision,
)
from humanwire._tool_kinds import error_text
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver, consume_approval
from humanwire.errors import HumanWireError

if TYPE_CHECKING:
    from google.adk.events import Event
    from google.adk.sessions import Session

__all__ = [
    "APP_KEY",
    "CALL_KEY",
    "CONFIRMATION_CALL",
    "INVOCATION_KEY",
    "PAYLOAD_KEY",
    "RESUME_GOOGLE_ADK",
    "SESSION_KEY",
    "USER_KEY",
    "ApprovalGate",
    "PausedApproval",
    "Policy",
    "approval_key",
    "paused_approvals",
    "require_approval",
]

logger = logging.getLogger("humanwire.google_adk")

CONFIRMATION_CALL = "adk_request_confirmation"
"""The function call ADK pauses a confirmation with (and the host answers)."""

RESUME_GOOGLE_ADK = "google_adk"
APP_KEY = "adk_app_name"
USER_KEY = "adk_user_id"
SESSION_KEY = "adk_session_id"
INVOCATION_KEY = "adk_invocation_id"
CALL_KEY = "adk_call_id"
"""The approval form's metadata keys: a webhook names the session and the call by itself."""

PAYLOAD_KEY = "humanwire"
"""Where the gate's confirmation request keeps its approval (``PendingApproval``)."""

Policy = Callable[..., bool | Awaitable[bool]]
"""When a call needs approval, in ADK's ``require_confirmation`` form: called with the
tool's own arguments as keyword arguments (and ``tool_context`` if it takes one), sync or
async, truthy for "ask a person"."""


@dataclass(frozen=True)
class PausedApproval(PendingApproval):
    """A call paused for approval, with the id of the ``adk_request_confirmation`` call
    that answers it (ADK makes that call after the gate asked, so the form's metadata
    cannot carry it: it is read from the session)."""

    confirmation_id: str = ""


# --- keys and metadata ------------------------------------------------------------------


@dataclass(frozen=True)
class CallKeys:
    """Where a tool call stands in ADK: app, user, session, invocation, call id."""

    app_name: str
    user_id: str
    session_id: str
    invocation_id: str
    call_id: str
    reuse: tuple[str, ...] = ()
    """Tells apart the calls of the invocation that share the call id (a model reusing
    ``call_1`` in a later step): none for the first."""

    @classmethod
    def of(cls, tool_context: ToolContext) -> CallKeys:
        session = tool_context.session
        call_id = tool_context.function_call_id or ""
        seen = [
            call.id or ""
            for event in session.events
            if event.invocation_id == tool_context.invocation_id
            for call in event.get_function_calls()
        ]
        return cls(
            app_name=session.app_name,
            user_id=session.user_id,
            session_id=session.id,
            invocation_id=tool_context.invocation_id,
            call_id=call_id,
            reuse=reuse_parts(seen, call_id),
        )

    def metadata(self, *, resumable: bool) -> dict[str, str]:
        """The approval form's metadata: a webhook receiver in any process finds the
        session and the call from the event alone. Only a paused call is marked
        ``humanwire_resume``: nothing resumes a call that waits in process."""
        metadata = {
            APP_KEY: metadata_value("app name", self.app_name),
            USER_KEY: metadata_value("user id", self.user_id),
            SESSION_KEY: metadata_value("session id", self.session_id),
            INVOCATION_KEY: metadata_value("invocation id", self.invocation_id),
            CALL_KEY: metadata_value("function call id", self.call_id),
        }
        return {RESUME_KEY: RESUME_GOOGLE_ADK, **metadata} if resumable else metadata


def approval_key(keys: CallKeys) -> str:
    """The approval form's Idempotency-Key: one form per tool call, however often ADK
    runs the gate for it (a resumed invocation, a retried one); a digest when the ids are
    long (session ids are the application's own)."""
    return idempotency_key(
        "approval",
        "google-adk",
        keys.app_name,
        keys.user_id,
        keys.session_id,
        keys.invocation_id,
        keys.call_id,
        *keys.reuse,
    )


# --- reading the session ----------------------------------------------------------------


def _own_request(session: Session, call_id: str) -> PendingApproval | None:
    """The approval the gate asked for ``call_id``, as recorded in the session by the
    gate's own confirmation request (written by the agent, never by the client)."""
    for event in reversed(session.events):
        requested = event.actions.requested_tool_confirmations.get(call_id)
        if requested is None or not isinstance(requested.payload, dict):
            continue
        data = requested.payload.get(PAYLOAD_KEY)
        if isinstance(data, dict):
            return PendingApproval.from_dict(data)
    return None


def paused_approvals(session: Session) -> list[PausedApproval]:
    """The humanwire approvals a session is paused at: the gates' confirmation requests
    after the session's last user event (an answer, or a new message, moves past them)."""
    events: list[Event] = list(session.events)
    last_user = max((i for i, event in enumerate(events) if event.author == "user"), default=-1)
    paused: list[PausedApproval] = []
    for event in events[last_user + 1 :]:
        for call in event.get_function_calls():
            if call.name != CONFIRMATION_CALL or not call.id:
                continue
            confirmation = (call.args or {}).get("toolConfirmation") or {}
            payload = confirmation.get("payload") if isinstance(confirmation, dict) else None
            data = payload.get(PAYLOAD_KEY) if isinstance(payload, dict) else None
            if isinstance(data, dict):
                paused.append(PausedApproval(**data, confirmation_id=call.id))
    return paused


def confirmation_response(approval: PausedApproval, decision: ApprovalDecision) -> types.Part:
    """The answer to a paused call's ``adk_request_confirmation``. ADK reads
    ``confirmed``; the gate reads the decision from the service, the payload only says
    which approval woke it."""
    return types.Part(
        function_response=types.FunctionResponse(
            name=CONFIRMATION_CALL,
            id=approval.confirmation_id,
            response={
                "confirmed": decision.approved,
                "payload": {
                    PAYLOAD_KEY: {
                        "interaction_id": approval.interaction_id,
                        "decision": decision.decision,
                    }
                },
            },
        )
    )


# --- the gate ---------------------------------------------------------------------------


def _disarmed(tool: BaseTool) -> BaseTool:
    """``tool`` without ADK's own confirmation (a copy when it had one), so the gate's
    approval is the only one asked for."""
    if getattr(tool, "_require_confirmation", False):
        tool = copy.copy(tool)
        tool._require_confirmation = False  # type: ignore[attr-defined]
    return tool


async def _call_policy(policy: Policy, args: dict[str, Any], tool_context: ToolContext) -> bool:
    """``policy`` called as ADK calls ``require_confirmation``: the tool's arguments it
    names (all with ``**kwargs``), plus ``tool_context`` if it takes one."""
    parameters = inspect.signature(policy).parameters
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    kwargs = {name: value for name, value in args.items() if takes_all or name in parameters}
    if "tool_context" in parameters:
        kwargs["tool_context"] = tool_context
    needed = policy(**kwargs)
    if inspect.isawaitable(needed):
        needed = await needed
    return bool(needed)  # anything truthy asks: approval fails closed


class ApprovalGate(LazyApprover, BaseTool):
    """An ADK tool that asks a person through humanwire before ``tool`` runs.

    Same name, description and declaration as ``tool`` (ADK offers the model the gate in
    its place). ``when`` (ADK's ``require_confirmation`` form: the tool's arguments as
    keywords) narrows it to some calls; left out, a callable ``require_confirmation`` the
    tool already has decides, else every call asks. ``wait=True`` waits for the decision
    inside the call; by default the run pauses at ADK's confirmation (see the module).

    ``approver`` or its options (``to``, ``channel``, ``follow_up_time``,
    ``default_on_timeout``, ``allow_respond``, ``client``...) say whom to ask; it is built
    on first use. ``description`` is the form's subtitle.
    """

    def __init__(
        self,
        tool: BaseTool,
        approver: Approver | None = None,
        *,
        when: Policy | None = None,
        description: str | None = None,
        wait: bool = False,
        **approver_options: Any,
    ) -> None:
        super().__init__(
            name=tool.name,
            description=tool.description,
            is_long_running=tool.is_long_running,
            custom_metadata=tool.custom_metadata,
        )
        self.tool = _disarmed(tool)
        self._policy_tool = tool if callable(getattr(tool, "_require_confirmation", None)) else None
        self.when = when
        self.form_description = description
        self.wait = wait
        self._approver = approver_source(approver, **approver_options)

    def __repr__(self) -> str:
        return f"ApprovalGate({self.tool!r})"

    def _get_declaration(self) -> types.FunctionDeclaration | None:
        return self.tool._get_declaration()

    async def needs_approval(self, args: dict[str, Any], tool_context: ToolContext) -> bool:
        """Whether this call asks a person: ``when``, else the tool's own callable
        ``require_confirmation``, else always."""
        if self.when is not None:
            return await _call_policy(self.when, args, tool_context)
        if self._policy_tool is not None:
            return await self._policy_tool.check_require_confirmation(args, tool_context)
        return True

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        if tool_context.tool_confirmation is not None:
            # The answer to this gate's pause: the decision governs, not the policy.
            return await self._resume(args, tool_context)
        if not await self.needs_approval(args, tool_context):
            return await self.tool.run_async(args=args, tool_context=tool_context)
        keys = CallKeys.of(tool_context)
        try:
            pending = await send_pending_approval(
                self.approver,
                call_id=keys.call_id,
                tool_name=self.name,
                arguments=dict(args),
                description=self.form_description,
                idempotency_key=approval_key(keys),
                metadata=keys.metadata(resumable=not self.wait),
            )
        except HumanWireError as exc:
            # Fails closed: the call does not run, and the model reads why.
            logger.warning("approval of %s (%s) not sent: %s", self.name, keys.call_id, exc)
            reason = error_text(exc)
            return {"error": f"{self.name} was not run: no approval could be asked ({reason})."}
        if self.wait:
            decision = await wait_for_decision(self.approver.async_client, pending)
            return await self._decided(decision, args, tool_context)
        tool_context.request_confirmation(
            hint=_hint(pending), payload={PAYLOAD_KEY: pending.to_dict()}
        )
        # Without it ADK hands the placeholder below to the model at once and the run
        # goes on instead of pausing.
        tool_context.actions.skip_summarization = True
        return {
            "error": (
                f"{self.name} waits for a person's approval (humanwire interaction "
                f"{pending.interaction_id}); it has not run."
            )
        }

    async def _resume(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Called again with an answer to the pause: run or not as the human decided on
        the service (never as the answer says)."""
        pending = _own_request(tool_context.session, tool_context.function_call_id or "")
        if pending is None:
            return {"error": f"{self.name} was not run: no humanwire approval was asked for it."}
        decision = await read_decision(self.approver.async_client, pending.interaction_id)
        if decision is None:
            return {
                "error": (
                    f"{self.name} was not run: its approval (humanwire interaction "
                    f"{pending.interaction_id}) is not decided yet."
                )
            }
        return await self._decided(decision, args, tool_context)

    async def _decided(
        self, decision: ApprovalDecision, args: dict[str, Any], tool_context: ToolContext
    ) -> Any:
        call_id = tool_context.function_call_id
        logger.info("approval of %s (%s): %s", self.name, call_id, decision.text)
        if decision.approved and decision.arguments is None:
            # Used once: consumed for this call as asked, before it runs; used already
            # (a resumed or repeated step), it ran before and does not run again.
            decision = await consume_approval(
                self.approver.async_client, decision, ApprovalRequest(self.name, dict(args))
            )
        if decision.approved and decision.arguments is None:
            return await self.tool.run_async(args=args, tool_context=tool_context)
        return {"error": denial_text(self.name, decision)}


def _hint(pending: PendingApproval) -> str:
    where = f": {pending.form_url}" if pending.form_url else ""
    return f"Waiting for a person's approval through humanwire{where}"


def _as_tool(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    if isinstance(tool, ApprovalGate):
        raise TypeError(f"{tool!r} is gated already")
    if isinstance(tool, BaseTool):
        return tool
    if callable(tool):
        return FunctionTool(tool)  # what ADK makes of a plain function in tools=[...]
    raise TypeError(f"require_approval gates an ADK tool or a function, not {tool!r}")


@overload
def require_approval(
    tool: BaseTool | Callable[..., Any],
    approver: Approver | None = None,
    *,
    when: Policy | None = None,
    description: str | None = None,
    wait: bool = False,
    **approver_options: Any,
) -> ApprovalGate: ...
@overload
def require_approval(
    tool: None = None,
    approver: Approver | None = None,
    *,
    when: Policy | None = None,
    description: str | None = None,
    wait: bool = False,
    **approver_options: Any,
) -> Callable[[BaseTool | Callable[..., Any]], ApprovalGate]: ...
def require_approval(
    tool: BaseTool | Callable[..., Any] | None = None,
    approver: Approver | None = None,
    *,
    when: Policy | None = None,
    description: str | None = None,
    wait: bool = False,
    **approver_options: Any,
) -> ApprovalGate | Callable[[BaseTool | Callable[..., Any]], ApprovalGate]:
    """``tool`` behind a person's approval: an :class:`ApprovalGate` (the original tool
    stays ungated). ``tool`` is any ADK tool with a declaration (a ``FunctionTool``,
    humanwire's own tools, an MCP tool) or a plain function (made a ``FunctionTool``, as
    ADK does); also a decorator, ``@require_approval(to=...)``. ``wait=True`` waits in the
    call; by default the run pauses at ADK's confirmation."""

    def gate(target: BaseTool | Callable[..., Any]) -> ApprovalGate:
        return ApprovalGate(
            _as_tool(target),
            approver,
            when=when,
            description=description,
            wait=wait,
            **approver_options,
        )

    return gate(tool) if tool is not None else gate
