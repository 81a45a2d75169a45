"""The ``io.modelcontextprotocol/tasks`` extension (MCP 2026-07-28): a wait on a person
as a task.

A client that declares the extension gets, from a waiting tool (``ask_human_<channel>``,
``human_form``, ``call_human``, ``request_approval``), a task at once instead of a held
request: the interaction is sent with no wait and the whole wait as its follow-up window,
so the service listens for the answer while the client polls ``tasks/get``.

A task keeps no state in this process: its id carries the interaction id (and, for the
status text, whom it waits on and until when), and ``tasks/get`` reads the interaction's
status from the service. A task therefore outlives a restart of ``humanwire mcp`` or of
the service. ``tasks/cancel`` ends the interaction on the service
(``POST /interactions/{id}/cancel``); a later ``tasks/get`` reads it as ended without a
response (the status keeps no outcome).

Clients that do not declare the extension (every client before 2026-07-28) get the tool
as before: a held request with progress notifications, then the check tool.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as t
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams, CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from humanwire._approval_tools import REQUEST_TOOL, approval_text
from humanwire._tooling import CHANNEL_NAMES, describe_status
from humanwire.errors import HumanWireError, NotFoundError

from .tools import McpTool, ToolCall
from .waiting import MAX_FOLLOW_UP

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from humanwire._client import AsyncHumanWire
    from humanwire.types import InteractionStatus

    from .server import ToolSource

__all__ = [
    "TASKS",
    "CreateTaskResult",
    "GetTaskResult",
    "HumanTasks",
    "TaskIdParams",
    "client_declares_tasks",
    "task_tools",
]

TASKS = "io.modelcontextprotocol/tasks"
"""The extension's identifier, as clients declare it."""
POLL_INTERVAL_MS = 2000
"""How often a client is asked to poll ``tasks/get``."""
TTL_MS = int((MAX_FOLLOW_UP + 3600) * 1000)
"""How long a task can be read: the service's longest follow-up window, and an hour."""
_ID_PREFIX = "hw1."
_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]


# -- wire models (SEP-2663: flat task fields, results inline in tasks/get) -----------------
class _TaskFields(t.Result):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    task_id: str = Field(alias="taskId")
    status: TaskStatus
    created_at: str = Field(alias="createdAt")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    ttl_ms: int | None = Field(None, alias="ttlMs")
    poll_interval_ms: int | None = Field(None, alias="pollIntervalMs")
    status_message: str | None = Field(None, alias="statusMessage")


class CreateTaskResult(_TaskFields):
    """What ``tools/call`` answers with when the client declared the extension."""

    result_type: Literal["task"] = Field("task", alias="resultType")


class GetTaskResult(_TaskFields):
    """``tasks/get``: the status and, once done, the tool's result inline."""

    result_type: Literal["complete"] = Field("complete", alias="resultType")
    result: dict[str, Any] | None = None


class TaskIdParams(t.RequestParams):
    """The params of ``tasks/get`` and ``tasks/cancel``."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    task_id: str = Field(alias="taskId")


# -- the task id: what a task needs, with no state kept here ---------------------------------
class _Handle(BaseModel):
    interaction_id: str = Field(alias="i")
    whom: str = Field(alias="w")
    until: float | None = Field(None, alias="u")
    tool: str = Field(alias="t")

    model_config = ConfigDict(populate_by_name=True)

    def task_id(self) -> str:
        raw = json.dumps(self.model_dump(by_alias=True), separators=(",", ":")).encode()
        return _ID_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def parse(cls, task_id: str) -> _Handle:
        """The handle a task id carries. Only its interaction id is trusted: the service
        answers for the account's own interactions only."""
        if not task_id.startswith(_ID_PREFIX):
            raise MCPError(code=_INVALID_PARAMS, message=f"unknown task {task_id!r}")
        encoded = task_id[len(_ID_PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            return cls.model_validate(json.loads(raw))
        except (ValueError, binascii.Error, ValidationError):
            raise MCPError(code=_INVALID_PARAMS, message=f"unknown task {task_id!r}") from None


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat().replace("+00:00", "Z")


def waiting_message(whom: str, until: float | None) -> str:
    """The status text of a working task: whom it waits on and until when."""
    if until is None:
        return f"Waiting for {whom}."
    return f"Waiting for {whom} until {_iso(until)}."


# -- starting a task: the tool's own runner, on a client that sends without waiting ----------
class _Started(Exception):
    """Raised by the deferring client once the interaction is sent: the runner stops."""

    def __init__(self, interaction_id: str, whom: str, until: float | None) -> None:
        super().__init__(interaction_id)
        self.interaction_id, self.whom, self.until = interaction_id, whom, until


def _whom_of_approvers(approvers: Any) -> str:
    names = []
    for approver in approvers or []:
        plain = approver.model_dump() if isinstance(approver, BaseModel) else dict(approver)
        names.append(f"{plain.get('to')} ({plain.get('channel')})")
    return "approval by " + ", ".join(names) if names else "an approval"


def _deferred(kwargs: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """The send's windows as one follow-up window: nothing held, the whole wait listened
    for. Returns the new keyword arguments and the window's end."""
    wait = float(kwargs.pop("wait_time", None) or 0)
    total = min(MAX_FOLLOW_UP, wait + float(kwargs.pop("follow_up_time", None) or 0))
    if total > 0:
        kwargs["follow_up_time"] = total
    return kwargs, time.time() + total


class _Channels:
    """``client.messages`` / ``client.forms``: ``<channel>(to=..., ...)`` sends deferred."""

    def __init__(self, real: Any, what: str) -> None:
        self._real, self._what = real, what

    def __getattr__(self, channel: str) -> Any:
        send = getattr(self._real, channel)

        async def deferred(**kwargs: Any) -> Any:
            kwargs, until = _deferred(kwargs)
            response = await send(**kwargs)
            whom = f"{self._what} from {kwargs.get('to')} by {CHANNEL_NAMES.get(channel, channel)}"
            raise _Started(response.interaction_id, whom, until)

        return deferred


class _Approvals:
    def __init__(self, real: Any) -> None:
        self._real = real

    async def create(self, **kwargs: Any) -> Any:
        kwargs, until = _deferred(kwargs)
        approval = await self._real.create(**kwargs)
        raise _Started(approval.interaction_id, _whom_of_approvers(kwargs.get("approvers")), until)


class _Calls:
    def __init__(self, real: Any) -> None:
        self._real = real

    async def create(self, **kwargs: Any) -> Any:
        kwargs.pop("wait_for_call_end", None)  # a call lasts as long as it lasts
        placed = await self._real.create(**kwargs)
        raise _Started(placed.interaction_id, f"the call with {kwargs.get('to')} to end", None)


class _DeferringClient:
    """The client a task's runner gets: its first send goes out without a wait."""

    def __init__(self, real: AsyncHumanWire) -> None:
        self.messages = _Channels(real.messages, "a reply")
        self.forms = _Channels(real.forms, "a form submission")
        self.approvals = _Approvals(real.approvals)
        self.calls = _Calls(real.calls)


def task_tools(tools: Sequence[McpTool]) -> dict[str, McpTool]:
    """The tools that answer with a task: those that wait on a person for a window the
    service keeps (channel cards wait as their channel says, and stay inline)."""
    waiting = {tool.name for tool in tools if tool.name.startswith("ask_human_")}
    waiting &= {f"ask_human_{channel}" for channel in CHANNEL_NAMES}
    waiting |= {"human_form", "call_human", REQUEST_TOOL}
    return {tool.name: tool for tool in tools if tool.name in waiting}


def client_declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and TASKS in capabilities.extensions)


async def _noop_progress(progress: float, total: float | None, message: str) -> None:
    return None


class HumanTasks(Extension):
    """Tasks for the waiting tools (see the module's docstring)."""

    identifier = TASKS

    def __init__(
        self,
        tools: Sequence[McpTool],
        arguments: Mapping[str, type[BaseModel]],
        source: ToolSource,
        metadata: Mapping[str, str],
    ) -> None:
        self._tools = task_tools(tools)
        self._arguments = dict(arguments)
        self._source = source
        self._metadata = dict(metadata)
        self.server: MCPServer | None = None
        """Set once the server is built: a ``Context`` for the source needs it."""

    def settings(self) -> dict[str, Any]:
        return {"tools": sorted(self._tools)}

    def methods(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskIdParams, self.get),
            MethodBinding("tasks/cancel", TaskIdParams, self.cancel),
        ]

    def _context(self, ctx: ServerRequestContext[Any, Any]) -> Context:
        return Context(request_context=ctx, mcp_server=self.server)

    async def _client(self, ctx: ServerRequestContext[Any, Any]) -> AsyncHumanWire:
        try:
            return await self._source.client(self._context(ctx))
        except ToolError as exc:
            raise MCPError(code=_INVALID_PARAMS, message=str(exc)) from None

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        tool = self._tools.get(params.name)
        if tool is None or not client_declares_tasks(ctx):
            return await call_next(ctx)
        from .server import invalid_arguments

        try:
            model = self._arguments[tool.name].model_validate(params.arguments or {})
        except ValidationError as exc:
            return _error(invalid_arguments(exc))
        # The SDK hands a tool its arguments one level deep (nested models stay models).
        args = {name: getattr(model, name) for name in type(model).model_fields}
        context = self._context(ctx)
        try:
            client = await self._source.client(context)

            def recipient(channel: str, to: str | None) -> str:
                return self._source.recipient(context, channel, to)

            call = ToolCall(
                _DeferringClient(client),  # type: ignore[arg-type]
                recipient,
                _noop_progress,
                self._metadata,
            )
            await tool.run(call, args)
        except _Started as started:
            now = _iso(time.time())
            handle = _Handle(
                interaction_id=started.interaction_id,
                whom=started.whom,
                until=started.until,
                tool=tool.name,
            )
            return CreateTaskResult(
                task_id=handle.task_id(),
                status="working",
                created_at=now,
                last_updated_at=now,
                ttl_ms=TTL_MS,
                poll_interval_ms=POLL_INTERVAL_MS,
                status_message=waiting_message(started.whom, started.until),
            )
        except ToolError as exc:
            return _error(str(exc))
        except HumanWireError as exc:
            return _error(f"humanwire: {exc}")
        # The runner answered without sending (it had nothing to wait for): inline.
        return await call_next(ctx)

    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> GetTaskResult:
        """Ends the interaction; a task already done is returned as it is."""
        handle = _Handle.parse(params.task_id)
        client = await self._client(ctx)
        status = await _cancel_interaction(client, handle.interaction_id)
        if status.result is not None:  # answered before the cancel came
            return await self.get(ctx, params)
        return GetTaskResult(
            task_id=params.task_id,
            created_at=_iso(status.created_at.timestamp()),
            last_updated_at=_iso(time.time()),
            ttl_ms=TTL_MS,
            status="cancelled",
            status_message="Cancelled: the service no longer listens for an answer.",
        )

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> GetTaskResult:
        """The task as the service has it now. The service not answering (stopped,
        restarting) is an error saying so, the task kept: it is the service's
        interaction, read again by the next ``tasks/get``."""
        handle = _Handle.parse(params.task_id)
        client = await self._client(ctx)
        try:
            return await self._read(params.task_id, handle, client)
        except NotFoundError:
            raise MCPError(
                code=_INVALID_PARAMS, message=f"unknown task {params.task_id!r}"
            ) from None
        except HumanWireError as exc:
            raise MCPError(
                code=_INTERNAL_ERROR,
                message=f"humanwire: {exc}. The task is kept: call tasks/get again "
                "once the service answers.",
            ) from None

    async def _read(self, task_id: str, handle: _Handle, client: AsyncHumanWire) -> GetTaskResult:
        status = await client.interactions.status(handle.interaction_id)
        created = _iso(status.created_at.timestamp())
        fields: dict[str, Any] = {
            "task_id": task_id,
            "created_at": created,
            "last_updated_at": _iso(time.time()),
            "ttl_ms": TTL_MS,
        }
        if not status.ended:
            return GetTaskResult(
                **fields,
                status="working",
                poll_interval_ms=POLL_INTERVAL_MS,
                status_message=waiting_message(handle.whom, handle.until),
            )
        if status.kind == "approval":
            text = approval_text(await client.approvals.get(handle.interaction_id))
        else:
            text = describe_status(status)
        result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=False)
        return GetTaskResult(
            **fields,
            status="completed",
            status_message="The human answered."
            if status.result is not None
            else "Ended without a response from the human.",
            result=result.model_dump(by_alias=True, mode="json", exclude_none=True),
        )


async def _cancel_interaction(client: AsyncHumanWire, interaction_id: str) -> InteractionStatus:
    try:
        return await client.interactions.cancel(interaction_id)
    except NotFoundError:
        raise MCPError(code=_INVALID_PARAMS, message=f"unknown task {interaction_id!r}") from None
    except HumanWireError as exc:
        raise MCPError(code=_INVALID_PARAMS, message=f"humanwire: {exc}") from None


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
