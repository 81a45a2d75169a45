"""The humanwire tools as the MCP server offers them: a tool per row of the tool table
(``humanwire._tool_kinds.TOOL_TABLE``; a channel card's row once per card), its name,
description, argument schema and client call the kind's (every adapter reads the same),
run on the core client (``AsyncHumanWire``). What is the MCP server's own: which tools a
configuration offers, the recipient each call gets from its source, and how long a
request holds for a person under the MCP client's limit, with progress (``.waiting``).
A tool added to the table is listed here with no code of its own.

A tool is framework-neutral here (:class:`McpTool`); ``humanwire.mcp.server`` registers
it with the MCP SDK.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from humanwire._approval_tools import (
    CONSUME_APPROVAL_DESCRIPTION,
    CONSUME_TOOL,
    REQUEST_TOOL,
    ConsumeApprovalInput,
    RequestApprovalInput,
    approval_text,
    consumed_text,
    not_consumed_text,
    request_approval_description,
)
from humanwire._tool_kinds import (
    LISTING_PERSON,
    LISTING_TO,
    TOOL_TABLE,
    AskHumanChannel,
    BareTool,
    CallHuman,
    HumanForm,
    MessageTool,
    PersonTool,
    ToolCore,
    ToolRow,
    bare,
    recipient_channel,
    takes,
)
from humanwire._tooling import (
    CHANNEL_NAMES,
    Operation,
    check_back_note,
    check_back_text,
    describe_status,
)
from humanwire.errors import AlreadyConsumedError, HumanWireError, NotApprovedError
from humanwire.types import FormResponse, MessageResponse

from .settings import CHANNELS, McpSettings
from .waiting import ProgressFn, WaitPlan, held_limit, hold_with_progress, plan_wait

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = ["CHECK_TOOL", "PERSON", "McpTool", "ToolCall", "build_tools"]

CHECK_TOOL = "check_human_interaction"
PERSON = "person"
"""Beside the channels: the person tools are offered (``/mcp``, whose person is the
request's ``Humanwire-Person``; elsewhere ``--person`` offers them), and
``ToolCall.recipient(PERSON, None)`` gives the person's id."""
_STATUS_POLL = 30.0
"""Seconds one status long-poll holds while a call is awaited (the service allows 60)."""


@dataclass(frozen=True)
class ToolCall:
    """What one call of a tool gets: the client of its account, its recipients, and the
    way to report progress to the MCP client."""

    client: AsyncHumanWire
    recipient: Callable[[str, str | None], str]
    """``(channel, to the model gave or None)`` → the recipient; raises ``ToolError``.
    ``(PERSON, None)``: the configured person's id."""
    progress: ProgressFn
    metadata: dict[str, str]


Runner = Callable[[ToolCall, dict[str, Any]], Awaitable[str]]


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    schema: type[BaseModel]
    run: Runner


def _plain(value: Any) -> Any:
    """Arguments as plain JSON: the SDK hands nested argument models over as models."""
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_none=True)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _meta(call: ToolCall) -> dict[str, Any]:
    return {"metadata": dict(call.metadata)} if call.metadata else {}


def _waited_text(
    response: MessageResponse | FormResponse, plan: WaitPlan, finish: Callable[[Any], str]
) -> str:
    if plan.split and response.responded is False and response.status == "pending":
        return check_back_text(response.interaction_id, CHECK_TOOL, plan.listening_after)
    return finish(response)


class _Catalog:
    """Builds the tools of one configuration, a tool per row of the tool table (a
    channel card's row once per card) that the configuration offers."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self.plan = plan_wait(settings.wait_time, settings.follow_up_time, settings.client_timeout)
        self.limit = held_limit(settings.client_timeout)

    def _waits(self, description: str) -> str:
        return f"{description} {check_back_note(CHECK_TOOL)}" if self.plan.split else description

    def offered(self, row: ToolRow, channels: Sequence[str]) -> list[dict[str, Any]]:
        """The options of each tool of ``row`` this server offers: none, one, or (a
        channel card) one per card. A kind it does not know is offered as it is."""
        settings, plan, kind = self.settings, self.plan, row.kind
        held = {"wait_time": plan.held, "follow_up_time": plan.follow_up}
        exposed = {"expose_recipient": settings.expose_recipients}
        if issubclass(kind, MessageTool):
            if row.channel not in channels:
                return []
            if row.waits:
                return [{**exposed, **held}]
            return [{**exposed, "follow_up_time": settings.follow_up_time}]
        if issubclass(kind, PersonTool):
            if PERSON not in channels and settings.person is None:
                return []
            person = {"fallback_after": settings.fallback_after}
            if row.waits:
                return [{**exposed, **held, **person}]
            return [{**exposed, "follow_up_time": settings.follow_up_time, **person}]
        if issubclass(kind, HumanForm):
            if settings.form_channel not in channels:
                return []
            fixed = settings.form
            form: dict[str, Any] = {}
            if fixed is not None:
                form = {"title": fixed.title, "fields": list(fixed.fields)}
                form["form_description"] = fixed.description or None
            return [{**exposed, **held, "channel": settings.form_channel, **form}]
        if issubclass(kind, AskHumanChannel):
            return [
                {"channel_id": card, "name": f"ask_human_{card}"} for card in settings.channel_ids
            ]
        if issubclass(kind, CallHuman):
            if "sms" not in channels:
                return []
            return [{**exposed, "wait_for_call_end": settings.wait_for_call_end}]
        return [{}]

    def tool(self, kind: type[ToolCore], options: dict[str, Any]) -> McpTool:
        """The MCP tool of ``kind`` with ``options``: its name, description and schema
        are the kind's; each call builds the kind with the call's recipient and metadata
        and holds its request as long as the MCP client allows, with progress."""
        built, takes_to = bare(kind), takes(kind, "to")
        to_person = issubclass(kind, PersonTool)
        # The recipient is the call's (its source's); listing needs one only to build it.
        listing = (
            {"to": LISTING_TO} if takes_to else {"person": LISTING_PERSON} if to_person else {}
        )
        listed = built(**options, **listing)
        channel = recipient_channel(listed)

        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            given = {"to": call.recipient(channel, args.get("to"))} if takes_to else {}
            if to_person:
                given = {"person": call.recipient(PERSON, None)}
            settled = {**options, **given, **self._call_options(listed)}
            tool = built(**settled, metadata=call.metadata)
            operation = tool.operation_for(_plain(args))
            return await self._hold(listed, operation, call)

        return McpTool(
            listed.name,
            self._described(listed),
            listed.args_model,
            run,
        )

    def _described(self, tool: BareTool) -> str:
        description = tool.description
        if isinstance(tool, HumanForm) or (
            isinstance(tool, (MessageTool, PersonTool)) and tool.wait_time
        ):
            return self._waits(description)
        if isinstance(tool, CallHuman) and tool.wait_for_call_end and self.limit is not None:
            return f"{description} {check_back_note(CHECK_TOOL)}"
        return description

    def _call_options(self, tool: ToolCore) -> dict[str, Any]:
        # Under a client's limit a call is placed, then followed on its status (_hold).
        if isinstance(tool, CallHuman) and self.limit is not None:
            return {"wait_for_call_end": False}
        return {}

    async def _hold(self, tool: ToolCore, operation: Operation[Any, str], call: ToolCall) -> str:
        """Run ``operation``: a request that waits for a person holds with progress, up
        to the MCP client's limit; the rest is the check tool's."""
        settings, plan, client = self.settings, self.plan, call.client
        interval = settings.progress_interval

        async def held(total: float, what: str) -> Any:
            send = operation.send(client)
            return await hold_with_progress(
                send, call.progress, total=total, what=what, interval=interval
            )

        if isinstance(tool, MessageTool) and tool.wait_time is not None:
            response = await held(plan.held, f"reply by {CHANNEL_NAMES[tool.channel]}")
            return _waited_text(response, plan, operation.finish)
        if isinstance(tool, PersonTool) and tool.wait_time is not None:
            response = await held(plan.held, "reply")
            return _waited_text(response, plan, operation.finish)
        if isinstance(tool, HumanForm):
            response = await held(plan.held, "form submission")
            return _waited_text(response, plan, operation.finish)
        if isinstance(tool, AskHumanChannel):
            total = self.limit if self.limit is not None else settings.wait_time
            return operation.finish(await held(total, "reply"))
        if isinstance(tool, CallHuman) and tool.wait_for_call_end:
            if self.limit is None:  # the client waits as long as the call lasts
                return operation.finish(await held(settings.wait_time, "call"))
            # A call lasts as long as it lasts: place it, then follow it on the status
            # until the client's limit, and hand it back to the check tool after that.
            placed = await operation.send(client)
            return await hold_with_progress(
                _follow_call(client, placed.interaction_id, self.limit),
                call.progress,
                total=self.limit,
                what="call",
                interval=interval,
            )
        return await operation.arun(client)

    # -- approvals --------------------------------------------------------------------
    def request_approval(self, channel: str) -> McpTool:
        """``request_approval``: approvers default to ``channel``'s configured human."""
        settings = self.settings

        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            approvers = _plain(args.get("approvers")) or [
                {"channel": channel, "to": call.recipient(channel, None)}
            ]
            plan = plan_wait(
                args.get("wait_time") or settings.wait_time,
                settings.follow_up_time,
                settings.client_timeout,
            )
            names = ("description", "quorum", "reject_quorum", "escalation", "remind_every")
            request: dict[str, Any] = {
                name: _plain(args[name]) for name in (*names, "on_timeout") if args.get(name)
            }
            arguments = args.get("action_arguments") or {}
            request.update(plan.windows(), **_meta(call))
            send = call.client.approvals.create(
                title=args["title"],
                action={"name": args["action_name"], "arguments": arguments},
                approvers=approvers,
                **request,
            )
            approval = await hold_with_progress(
                send,
                call.progress,
                total=plan.held,
                what="approval decision",
                interval=settings.progress_interval,
            )
            return approval_text(approval)

        return McpTool(
            REQUEST_TOOL,
            request_approval_description(settings.wait_time),
            RequestApprovalInput,
            run,
        )

    def consume_approval(self) -> McpTool:
        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            interaction_id = args["interaction_id"]
            try:
                await call.client.approvals.consume(
                    interaction_id, action_digest=args["action_digest"]
                )
            except AlreadyConsumedError as exc:
                return not_consumed_text(interaction_id, already=True, reason=exc.message)
            except NotApprovedError as exc:
                return await _not_approved_text(call.client, interaction_id, exc)
            return consumed_text(interaction_id)

        return McpTool(CONSUME_TOOL, CONSUME_APPROVAL_DESCRIPTION, ConsumeApprovalInput, run)


async def _not_approved_text(
    client: AsyncHumanWire, interaction_id: str, error: NotApprovedError
) -> str:
    """A consume refused as not approved: rejected or closed undecided (final: the model
    must not poll it), or still pending, as the approval's record says."""
    try:
        approval = await client.approvals.get(interaction_id)
    except HumanWireError:
        return not_consumed_text(interaction_id, already=False, reason=error.message)
    if approval.decision == "rejected":
        reason = "rejected by default (no decision in time)" if approval.timed_out else "rejected"
        return not_consumed_text(interaction_id, already=False, reason=reason, final=True)
    if approval.status == "ended":
        reason = "not decided in time (closed without an approval)"
        return not_consumed_text(interaction_id, already=False, reason=reason, final=True)
    return not_consumed_text(interaction_id, already=False, reason="pending", final=False)


async def _follow_call(client: AsyncHumanWire, interaction_id: str, limit: float) -> str:
    deadline = time.monotonic() + limit
    while True:
        left = deadline - time.monotonic()
        status = await client.interactions.status(
            interaction_id, wait=max(0.0, min(_STATUS_POLL, left))
        )
        if status.ended:
            return describe_status(status)
        if deadline - time.monotonic() <= 0:
            return check_back_text(interaction_id, CHECK_TOOL, None)


def build_tools(settings: McpSettings, channels: Sequence[str] = CHANNELS) -> list[McpTool]:
    """The tools of ``settings`` for the channels that have a recipient, in the order of
    the tool table (``humanwire._tool_kinds.TOOL_TABLE``): ``ask_human_<ch>`` and
    ``notify_human_<ch>`` per channel, ``ask_human_person`` and ``notify_human_person``
    with a person configured (or :data:`PERSON` in ``channels``),
    ``ask_human_<channel_id>`` per channel card,
    ``human_form`` (when its channel is offered), ``call_human`` (when sms is offered: a
    call goes to the sms number), ``check_human_interaction``; then ``request_approval``
    (approvers default to the first channel's recipient) with ``consume_approval``."""
    catalog = _Catalog(settings)
    tools = [
        catalog.tool(row.kind, options)
        for row in TOOL_TABLE
        for options in catalog.offered(row, channels)
    ]
    addressed = [channel for channel in channels if channel != PERSON]
    if addressed:
        tools += [catalog.request_approval(addressed[0]), catalog.consume_approval()]
    return tools
