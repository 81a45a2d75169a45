"""The humanwire tools as the MCP server offers them: names, descriptions, argument
schemas and result texts of ``humanwire._tooling`` / ``humanwire._tool_schemas`` (the
LangChain tools read the same), run on the core client (``AsyncHumanWire``).

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
from humanwire._tool_schemas import (
    CallInput,
    CallWithRecipientInput,
    CheckInteractionInput,
    MessageInput,
    form_input_schema,
    message_input_schema,
)
from humanwire._tooling import (
    ASK_CHANNEL_DESCRIPTION,
    CHANNEL_NAMES,
    CHECK_DESCRIPTION,
    ask_description,
    call_description,
    call_text,
    check_back_note,
    check_back_text,
    describe_status,
    form_description,
    form_fields_from_specs,
    form_text,
    message_text,
    notify_description,
    sent_text,
    with_link,
)
from humanwire.errors import AlreadyConsumedError, HumanWireError, NotApprovedError
from humanwire.types import FormResponse, MessageResponse

from .settings import CHANNELS, McpSettings
from .waiting import ProgressFn, WaitPlan, held_limit, hold_with_progress, plan_wait

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire

__all__ = ["CHECK_TOOL", "McpTool", "ToolCall", "build_tools"]

CHECK_TOOL = "check_human_interaction"
_STATUS_POLL = 30.0
"""Seconds one status long-poll holds while a call is awaited (the service allows 60)."""


@dataclass(frozen=True)
class ToolCall:
    """What one call of a tool gets: the client of its account, its recipients, and the
    way to report progress to the MCP client."""

    client: AsyncHumanWire
    recipient: Callable[[str, str | None], str]
    """``(channel, to the model gave or None)`` → the recipient; raises ``ToolError``."""
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
    """Builds the tools of one configuration."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self.plan = plan_wait(settings.wait_time, settings.follow_up_time, settings.client_timeout)

    def _waits(self, description: str) -> str:
        return f"{description} {check_back_note(CHECK_TOOL)}" if self.plan.split else description

    # -- messages ---------------------------------------------------------------------
    def ask(self, channel: str) -> McpTool:
        plan, interval = self.plan, self.settings.progress_interval

        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            to = call.recipient(channel, args.get("to"))
            send = getattr(call.client.messages, channel)(
                to=to, message=args["message"], **plan.windows(), **_meta(call)
            )
            what = f"reply by {CHANNEL_NAMES[channel]}"
            response = await hold_with_progress(
                send, call.progress, total=plan.held, what=what, interval=interval
            )
            return _waited_text(response, plan, message_text)

        return McpTool(
            f"ask_human_{channel}",
            self._waits(ask_description(channel, plan.held)),
            message_input_schema(
                note=False, channel=channel, expose_recipient=self.settings.expose_recipients
            ),
            run,
        )

    def notify(self, channel: str) -> McpTool:
        follow_up = self.settings.follow_up_time

        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            to = call.recipient(channel, args.get("to"))
            windows = {"follow_up_time": follow_up} if follow_up is not None else {}
            response = await getattr(call.client.messages, channel)(
                to=to, message=args["message"], **windows, **_meta(call)
            )
            return sent_text(response, channel)

        return McpTool(
            f"notify_human_{channel}",
            notify_description(channel),
            message_input_schema(
                note=True, channel=channel, expose_recipient=self.settings.expose_recipients
            ),
            run,
        )

    def channel_card(self, channel_id: str) -> McpTool:
        interval, limit = self.settings.progress_interval, held_limit(self.settings.client_timeout)

        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            send = call.client.messages.channel(channel_id, message=args["message"], **_meta(call))
            total = limit if limit is not None else self.settings.wait_time
            response = await hold_with_progress(
                send, call.progress, total=total, what="reply", interval=interval
            )
            return message_text(response)

        return McpTool(f"ask_human_{channel_id}", ASK_CHANNEL_DESCRIPTION, MessageInput, run)

    # -- forms ------------------------------------------------------------------------
    def form(self) -> McpTool:
        settings, plan = self.settings, self.plan
        channel, fixed = settings.form_channel, settings.form

        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            to = call.recipient(channel, args.get("to"))
            if fixed is None:
                # The model's design: an InvalidRequestError tells it what to fix.
                fields = form_fields_from_specs(list(args.get("fields") or []))
                title, description = args["title"], args.get("description")
            else:
                fields, title, description = list(fixed.fields), fixed.title, fixed.description
            kwargs: dict[str, Any] = {"to": to, "title": title, "fields": fields}
            if description:
                kwargs["description"] = description
            if channel != "whatsapp" and args.get("message"):
                kwargs["message"] = with_link(args["message"])
            send = getattr(call.client.forms, channel)(**kwargs, **plan.windows(), **_meta(call))
            response = await hold_with_progress(
                send,
                call.progress,
                total=plan.held,
                what="form submission",
                interval=settings.progress_interval,
            )
            return _waited_text(
                response,
                plan,
                lambda r: form_text(r, submitted_prefix="The human submitted the form:\n"),
            )

        if fixed is None:
            description = form_description(channel, plan.held)
        else:
            labels = [field.label for field in fixed.fields]
            description = form_description(channel, plan.held, title=fixed.title, labels=labels)
        schema = form_input_schema(
            dynamic=fixed is None, channel=channel, expose_recipient=settings.expose_recipients
        )
        return McpTool("human_form", self._waits(description), schema, run)

    # -- calls ------------------------------------------------------------------------
    def call(self) -> McpTool:
        settings = self.settings
        limit = held_limit(settings.client_timeout)

        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            to = call.recipient("sms", args.get("to"))
            request = {"to": to, "prompt": args["prompt"], **_meta(call)}
            if not settings.wait_for_call_end:
                return call_text(await call.client.calls.create(**request))
            if limit is None:  # the client waits as long as the call lasts
                send = call.client.calls.create(**request, wait_for_call_end=True)
                response = await hold_with_progress(
                    send,
                    call.progress,
                    total=settings.wait_time,
                    what="call",
                    interval=settings.progress_interval,
                )
                return call_text(response)
            # A call lasts as long as it lasts: place it, then follow it on the status
            # until the client's limit, and hand it back to the check tool after that.
            placed = await call.client.calls.create(**request)
            return await hold_with_progress(
                _follow_call(call.client, placed.interaction_id, limit),
                call.progress,
                total=limit,
                what="call",
                interval=settings.progress_interval,
            )

        wait_note = settings.wait_for_call_end and limit is not None
        description = call_description(settings.wait_for_call_end)
        schema = CallWithRecipientInput if settings.expose_recipients else CallInput
        return McpTool(
            "call_human",
            f"{description} {check_back_note(CHECK_TOOL)}" if wait_note else description,
            schema,
            run,
        )

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

    # -- interactions -----------------------------------------------------------------
    def check(self) -> McpTool:
        async def run(call: ToolCall, args: dict[str, Any]) -> str:
            return describe_status(await call.client.interactions.status(args["interaction_id"]))

        return McpTool(CHECK_TOOL, CHECK_DESCRIPTION, CheckInteractionInput, run)


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
    """The tools of ``settings`` for the channels that have a recipient: ``ask_human_<ch>``
    and ``notify_human_<ch>`` per channel, ``human_form`` (when its channel is offered),
    ``ask_human_<channel_id>`` per channel card, ``call_human`` (when sms is offered: a
    call goes to the sms number), ``check_human_interaction``, and ``request_approval``
    (approvers default to the first channel's recipient) with ``consume_approval``."""
    catalog = _Catalog(settings)
    tools = [catalog.ask(channel) for channel in channels]
    tools += [catalog.notify(channel) for channel in channels]
    if settings.form_channel in channels:
        tools.append(catalog.form())
    tools += [catalog.channel_card(channel_id) for channel_id in settings.channel_ids]
    if "sms" in channels:
        tools.append(catalog.call())
    tools.append(catalog.check())
    if channels:
        tools += [catalog.request_approval(channels[0]), catalog.consume_approval()]
    return tools
