"""Tools of your own behind a humanwire approval (``build_server(..., gated=[...])``).

A gated tool is a function registered on the MCP server whose call runs only once people
approve it: the call's approval is asked through ``POST /approvals`` (the action is the
tool's name and the call's arguments, so the decision binds exactly that call), and the
function runs after the approval is consumed (``POST /approvals/{id}/consume``), which
the service allows once. So it never runs on a rejection or without a decision, and
never twice, whichever process continues the call and however often.

How the call waits depends on what the client negotiated:

- **MCP 2026-07-28** (multi round-trip requests): the first ``tools/call`` creates the
  approval without holding and answers at once with an ``input_required`` result. It
  carries, when the client declared form elicitation, one input request (an
  ``elicitation/create`` telling the person at the client whom the approval waits on;
  its answer is never taken as the decision: declining withdraws the call), and a
  ``requestState`` the client echoes when it calls again. The state names the approval
  and the call (tool, arguments' digest), signed with the server's state key
  (:class:`ApprovalState`): a state that was not minted by a server holding the key, or
  that is presented with another tool or other arguments, is refused. Each continuation
  waits for the decision as long as the client allows (progress meanwhile), then runs
  the function (approved), says why it did not (rejected, undecided at the end of the
  window, used before), or answers ``input_required`` again with the state alone.
- **Earlier revisions**: the call holds the approval request with progress
  notifications under the client's limit, as ``request_approval`` does; undecided by
  then, it closes the request and says so (nothing ran; calling again asks again).

With a key of the server's own (``HUMANWIRE_MCP_STATE_KEY``, or ``state_key=``) a
continuation survives a restart and may come to another process with the same key;
without one, each server draws a key of its own and its continuations end with it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as t
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, ToolBinding
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams, CallToolResult, InputRequiredResult, TextContent
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from humanwire.approval import format_arguments
from humanwire.errors import AlreadyConsumedError, HumanWireError, NotApprovedError
from humanwire.types.approvals import action_digest

from .waiting import MAX_FOLLOW_UP, hold_with_progress, plan_wait

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from humanwire._client import AsyncHumanWire
    from humanwire.types.approvals import Approval

    from .server import ToolSource
    from .settings import McpSettings

__all__ = [
    "APPROVAL_INPUT",
    "GATE",
    "ApprovalState",
    "GatedTool",
    "HumanGate",
    "request_state_security",
]

GATE = "dev.humanwire/approval-gate"
"""The identifier the gate advertises its tools under (``capabilities.extensions``)."""
APPROVAL_INPUT = "humanwire_approval"
"""The key of the one input request a gated call's first ``input_required`` carries."""
STATE_TTL = MAX_FOLLOW_UP + 3600
"""Seconds a continuation's state is accepted: the longest window, and an hour."""
_STATE_PREFIX = "hwa1."
_INVALID_PARAMS = -32602
_CLOSE_AFTER_HOLD = 1.0
"""``followUpTime`` of a held request: it closes right after, and ``onTimeout`` decides."""
_CLOSING_WAIT = 15.0


@dataclass(frozen=True)
class GatedTool:
    """A function the server offers as a tool that runs only once approved.

    ``fn`` (sync or async) is registered as the SDK registers any tool: its signature is
    the argument schema, its docstring the description unless ``description`` is given.
    ``approvers`` (``[{"channel", "to"}, …]``) decide; left out, the recipient the
    server's source gives for ``channel``. ``title`` is the approval's title (default
    ``Approve <name>?``); ``on_timeout`` what the service decides when nobody did."""

    fn: Callable[..., Any]
    name: str | None = None
    description: str | None = None
    title: str | None = None
    channel: str = "sms"
    approvers: Sequence[Mapping[str, str]] | None = None
    quorum: int | None = None
    on_timeout: str = "reject"

    @property
    def tool_name(self) -> str:
        return self.name or self.fn.__name__


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def arguments_digest(arguments: Mapping[str, Any] | None) -> str:
    """The digest a continuation binds the call's arguments with (canonical JSON)."""
    plain = json.dumps(dict(arguments or {}), sort_keys=True, separators=(",", ":"))
    return _b64(hashlib.sha256(plain.encode()).digest())


def _derive(key: bytes, label: bytes) -> bytes:
    return hmac.new(key, b"humanwire/mcp/" + label, hashlib.sha256).digest()


def request_state_security(key: bytes) -> RequestStateSecurity:
    """The SDK's seal around every ``requestState`` (AES-GCM, bound to the tool and its
    arguments), under a key derived from the server's state key and with a TTL a person
    can meet: the SDK's default is a key of the process's own, for 600 s."""
    return RequestStateSecurity(keys=[_derive(key, b"request-state")], ttl=STATE_TTL)


def state_key_bytes(key: bytes | str | None) -> bytes:
    """The state key given (text as UTF-8, at least 32 bytes), else a random one."""
    if key is None:
        return secrets.token_bytes(32)
    raw = key.encode() if isinstance(key, str) else bytes(key)
    if len(raw) < 32:
        raise ValueError("the MCP state key must be at least 32 bytes (HUMANWIRE_MCP_STATE_KEY)")
    return raw


@dataclass(frozen=True)
class _Continuation:
    interaction_id: str
    tool: str
    arguments: str
    """The arguments' digest (:func:`arguments_digest`)."""
    until: float


class ApprovalState:
    """Signs and checks a gated call's continuation: ``hwa1.<payload>.<HMAC-SHA256>``
    over the approval's interaction id, the tool, the arguments' digest and the end of
    the window, with a key only the server holds."""

    def __init__(self, key: bytes) -> None:
        self._key = _derive(key, b"approval-state")

    def sign(self, continuation: _Continuation) -> str:
        payload = json.dumps(
            {
                "i": continuation.interaction_id,
                "t": continuation.tool,
                "a": continuation.arguments,
                "u": continuation.until,
            },
            separators=(",", ":"),
        ).encode()
        mac = hmac.new(self._key, payload, hashlib.sha256).digest()
        return f"{_STATE_PREFIX}{_b64(payload)}.{_b64(mac)}"

    def verify(self, state: str, tool: str, arguments: Mapping[str, Any] | None) -> _Continuation:
        """The continuation ``state`` carries for this call; ``MCPError`` (invalid params)
        for a state this server did not sign, or signed for another call."""
        refused = MCPError(code=_INVALID_PARAMS, message="humanwire: invalid approval state")
        if not state.startswith(_STATE_PREFIX):
            raise refused
        encoded, _, signature = state[len(_STATE_PREFIX) :].partition(".")
        try:
            payload, mac = _unb64(encoded), _unb64(signature)
        except (ValueError, binascii.Error):
            raise refused from None
        expected = hmac.new(self._key, payload, hashlib.sha256).digest()
        if not hmac.compare_digest(mac, expected):
            raise refused
        try:
            claims = json.loads(payload)
            found = _Continuation(
                interaction_id=str(claims["i"]),
                tool=str(claims["t"]),
                arguments=str(claims["a"]),
                until=float(claims["u"]),
            )
        except (ValueError, KeyError, TypeError):
            raise refused from None
        if found.tool != tool or found.arguments != arguments_digest(arguments):
            raise MCPError(
                code=_INVALID_PARAMS,
                message="humanwire: this approval state belongs to another tool call",
            )
        return found


def _text(text: str, *, error: bool) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


def _not_run(reason: str) -> CallToolResult:
    # An error result: the tool produced no output (and its output schema is not owed).
    return _text(f"Not run: {reason}", error=True)


def _whom(approvers: Sequence[Mapping[str, str]]) -> str:
    return ", ".join(f"{a.get('to')} ({a.get('channel')})" for a in approvers)


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _declares_form_elicitation(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities else None
    # An empty elicitation capability means form mode (the spec's default).
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


class HumanGate(Extension):
    """The gated tools of one server (see the module's docstring)."""

    identifier = GATE

    def __init__(
        self,
        gated: Sequence[GatedTool],
        source: ToolSource,
        settings: McpSettings,
        state: ApprovalState,
    ) -> None:
        self._gated = {tool.tool_name: tool for tool in gated}
        if len(self._gated) != len(gated):
            raise ValueError("two gated tools share a name")
        # The SDK's own reading of each function's arguments: a call the function would
        # refuse is refused before anyone is asked to approve it.
        self._checks = {
            name: Tool.from_function(tool.fn, name=name).fn_metadata
            for name, tool in self._gated.items()
        }
        self._source = source
        self._settings = settings
        self._state = state
        self.server: MCPServer | None = None
        """Set once the server is built: a ``Context`` for the source needs it."""

    def settings(self) -> dict[str, Any]:
        return {"tools": sorted(self._gated)}

    def tools(self) -> Sequence[ToolBinding]:
        return [
            ToolBinding(
                fn=tool.fn, kwargs={"name": tool.tool_name, "description": tool.description}
            )
            for tool in self._gated.values()
        ]

    def _context(self, ctx: ServerRequestContext[Any, Any]) -> Context:
        return Context(request_context=ctx, mcp_server=self.server)

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        tool = self._gated.get(params.name)
        if tool is None:
            return await call_next(ctx)
        try:
            self._checks[tool.tool_name].validate_arguments(params.arguments or {})
        except ValidationError as exc:
            from .server import invalid_arguments

            return _text(invalid_arguments(exc), error=True)
        context = self._context(ctx)
        try:
            client = await self._source.client(context)
            if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                return await self._held(tool, params, context, client, call_next, ctx)
            if params.request_state is None:
                return await self._ask(tool, params, context, client, ctx)
            return await self._continue(tool, params, context, client, call_next, ctx)
        except ToolError as exc:
            return _text(str(exc), error=True)
        except HumanWireError as exc:
            # Nothing ran, and the model knows why.
            return _not_run(f"the approval could not be requested: humanwire: {exc}")

    # -- the approval request -------------------------------------------------------------
    def _approvers(self, tool: GatedTool, context: Context) -> list[dict[str, str]]:
        if tool.approvers:
            return [dict(approver) for approver in tool.approvers]
        to = self._source.recipient(context, tool.channel, None)
        return [{"channel": tool.channel, "to": to}]

    def _request(
        self, tool: GatedTool, params: CallToolRequestParams, context: Context
    ) -> dict[str, Any]:
        arguments = dict(params.arguments or {})
        request: dict[str, Any] = {
            "title": tool.title or f"Approve {tool.tool_name}?",
            "description": f"An AI agent asks to run {tool.tool_name}:\n"
            + format_arguments(arguments),
            "action": {"name": tool.tool_name, "arguments": arguments},
            "approvers": self._approvers(tool, context),
            "on_timeout": tool.on_timeout,
        }
        if tool.quorum is not None:
            request["quorum"] = tool.quorum
        if self._settings.metadata:
            request["metadata"] = dict(self._settings.metadata)
        return request

    async def _run_once(
        self,
        approval: Approval,
        params: CallToolRequestParams,
        client: AsyncHumanWire,
        call_next: CallNext,
        ctx: ServerRequestContext[Any, Any],
    ) -> HandlerResult:
        """Consume a decided approval, then run the tool: only the first consume runs it."""
        if approval.decision != "approved":
            return _not_run(_decided_text(approval))
        digest = action_digest({"name": params.name, "arguments": dict(params.arguments or {})})
        try:
            await client.approvals.consume(approval.interaction_id, action_digest=digest)
        except AlreadyConsumedError:
            return _not_run("this approval was used already: the action ran before.")
        except NotApprovedError as exc:
            return _not_run(f"the service says it is not approved: {exc.message}")
        return await call_next(ctx)

    # -- earlier revisions: held, with progress ------------------------------------------
    async def _held(
        self,
        tool: GatedTool,
        params: CallToolRequestParams,
        context: Context,
        client: AsyncHumanWire,
        call_next: CallNext,
        ctx: ServerRequestContext[Any, Any],
    ) -> HandlerResult:
        settings = self._settings
        plan = plan_wait(settings.wait_time, None, settings.client_timeout)
        send = client.approvals.create(
            **self._request(tool, params, context),
            wait_time=plan.held,
            follow_up_time=_CLOSE_AFTER_HOLD,
        )
        approval = await hold_with_progress(
            send,
            context.report_progress,
            total=plan.held,
            what="approval decision",
            interval=settings.progress_interval,
        )
        if approval.status == "pending":  # closes a second after the hold: read its end
            approval = await client.approvals.wait(approval.interaction_id, timeout=_CLOSING_WAIT)
        if approval.status == "pending":
            await _close(client, approval.interaction_id)
            return _not_run("no decision in time; nothing ran. Calling the tool again asks again.")
        return await self._run_once(approval, params, client, call_next, ctx)

    # -- 2026-07-28: input-required results ----------------------------------------------
    async def _ask(
        self,
        tool: GatedTool,
        params: CallToolRequestParams,
        context: Context,
        client: AsyncHumanWire,
        ctx: ServerRequestContext[Any, Any],
    ) -> InputRequiredResult:
        settings = self._settings
        window = min(MAX_FOLLOW_UP, settings.wait_time + (settings.follow_up_time or 0))
        request = self._request(tool, params, context)
        approval = await client.approvals.create(**request, follow_up_time=window)
        continuation = _Continuation(
            interaction_id=approval.interaction_id,
            tool=params.name,
            arguments=arguments_digest(params.arguments),
            until=time.time() + window,
        )
        message = (
            f"{tool.tool_name} waits for approval by {_whom(request['approvers'])} until "
            f"{_iso(continuation.until)} (approval {approval.interaction_id}). They decide; "
            "answer to go on waiting, or decline to withdraw the call."
        )
        requests: dict[str, t.InputRequest] | None = None
        if _declares_form_elicitation(ctx):
            form = t.ElicitRequestFormParams(
                message=message, requested_schema={"type": "object", "properties": {}}
            )
            requests = {APPROVAL_INPUT: t.ElicitRequest(params=form)}
        return InputRequiredResult(
            input_requests=requests, request_state=self._state.sign(continuation)
        )

    async def _continue(
        self,
        tool: GatedTool,
        params: CallToolRequestParams,
        context: Context,
        client: AsyncHumanWire,
        call_next: CallNext,
        ctx: ServerRequestContext[Any, Any],
    ) -> HandlerResult:
        assert params.request_state is not None
        continuation = self._state.verify(params.request_state, params.name, params.arguments)
        answer = (params.input_responses or {}).get(APPROVAL_INPUT)
        if isinstance(answer, t.ElicitResult) and answer.action in ("decline", "cancel"):
            await _close(client, continuation.interaction_id)
            return _not_run("withdrawn at the client before a decision; nothing ran.")
        settings = self._settings
        left = max(0.0, continuation.until - time.time())
        plan = plan_wait(max(1.0, left), None, settings.client_timeout)
        approval = await hold_with_progress(
            client.approvals.wait(continuation.interaction_id, timeout=min(plan.held, left)),
            context.report_progress,
            total=plan.held,
            what="approval decision",
            interval=settings.progress_interval,
        )
        if approval.status == "pending":
            if time.time() < continuation.until:
                # Still undecided: the client calls again with the same state.
                return InputRequiredResult(request_state=params.request_state)
            await _close(client, continuation.interaction_id)
            return _not_run("no decision in time; nothing ran.")
        return await self._run_once(approval, params, client, call_next, ctx)


def _decided_text(approval: Approval) -> str:
    if approval.decision == "rejected":
        if approval.timed_out:
            return "rejected by default (no decision in time); nothing ran."
        comments = [d.comment for d in approval.decisions if d.comment]
        said = f" ({'; '.join(comments)})" if comments else ""
        return f"rejected by a human{said}; nothing ran."
    return "closed without an approval; nothing ran."


async def _close(client: AsyncHumanWire, interaction_id: str) -> None:
    """Ends an undecided approval, so no late decision can be consumed for it."""
    # Ended already, it cannot be approved later either.
    with contextlib.suppress(HumanWireError):
        await client.interactions.cancel(interaction_id)
