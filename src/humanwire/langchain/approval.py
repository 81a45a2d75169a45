"""Human approval of tool calls: a blocking callback handler and a decorator.

Both send an approval request (``POST /approvals``: the tool name and its arguments as
the ``action``, shown readably to the approvers) and wait for the decision. Approved, the
approval is consumed for exactly this call (``POST /approvals/{id}/consume`` with the
action's digest) before the tool runs. A rejection stops the tool with
``ApprovalRejected`` carrying the comment; a timeout applies the approver's
``on_timeout`` ("reject" unless told otherwise) and says it was a timeout. An approval
used already (the same tool call run again: a retried step, a resumed graph; the
request's key derives from the graph's thread and task, the tool call id and the action)
stops the tool with ``ApprovalRejected`` whose decision is ``"consumed"``: the tool ran
before and is not run again. An approval that cannot be requested (the service refused
or is unreachable) stops the tool too, saying so: nothing runs unapproved.

``ApprovalRejected`` is a ``ToolException`` and, raised inside a LangGraph run, a
``ToolInvocationError`` too: the tool node of ``create_agent`` (whose default handler turns
only those into messages) hands the reason, the approver's comment included, to the
model as the tool's result instead of ending the run.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import sys
from collections.abc import Callable, Collection
from typing import Any, Protocol, TypeVar, overload
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import BaseTool, ToolException

from humanwire._pauses import idempotency_key, unrequested_text
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver, action_digest_of
from humanwire.errors import HumanWireError

__all__ = [
    "ApprovalRejected",
    "HumanApprovalCallbackHandler",
    "require_approval",
]

F = TypeVar("F", bound=Callable[..., Any])
ToolT = TypeVar("ToolT", bound=BaseTool)
ToolFilter = Collection[str] | Callable[[str, dict[str, Any]], bool] | None
Describe = Callable[[str, dict[str, Any]], str | None]


class ApprovalRejected(ToolException):
    """The human rejected the action, or nobody decided in time and the default is reject,
    or the approval could not be requested (``error`` holds why).

    ``decision`` holds the details (``timed_out`` tells a timeout from a human "no").
    """

    def __init__(
        self, action: str, decision: ApprovalDecision, *, error: Exception | None = None
    ) -> None:
        self.action = action
        self.decision = decision
        self.error = error
        if error is not None:
            message = unrequested_text(action, error)
        elif decision.decision == "consumed":
            message = (
                f"{action} was not run again: its approval was used already, so it ran "
                "before (a repeated or resumed step)."
            )
        elif decision.timed_out:
            message = (
                f"{action} was not run: no approval decision arrived in time "
                "(timeout; rejected by default)."
            )
        elif decision.decision == "respond":
            message = f"{action} was not run. The human answered instead: {decision.comment or ''}"
        else:
            reason = f" Reason: {decision.comment}" if decision.comment else ""
            message = f"{action} was not run: a human rejected it.{reason}"
        # What LangGraph's tool node reads (``ToolInvocationError.message``); its own
        # constructor is about arguments that do not validate, so it is not called.
        self.message = message.strip()
        Exception.__init__(self, self.message)


_reported: list[type[ApprovalRejected]] = []


def _rejection_class() -> type[ApprovalRejected]:
    """``ApprovalRejected``, and a ``ToolInvocationError`` too once LangGraph is loaded (a
    tool node runs): its default error handler hands only those to the model, as the
    call's result, instead of ending the run. Made when first needed, so importing the
    adapter does not load LangGraph (most of a second)."""
    if _reported:
        return _reported[0]
    module = sys.modules.get("langgraph.prebuilt.tool_node")
    invocation_error = getattr(module, "ToolInvocationError", None)
    if not isinstance(invocation_error, type):
        return ApprovalRejected
    joined = type(
        "ApprovalRejected",
        (ApprovalRejected, invocation_error),
        {"__module__": __name__, "__doc__": ApprovalRejected.__doc__},
    )
    _reported.append(joined)
    return joined


def _rejection(
    action: str, decision: ApprovalDecision, *, error: Exception | None = None
) -> ApprovalRejected:
    """The ``ApprovalRejected`` to raise (see :func:`_rejection_class`)."""
    return _rejection_class()(action, decision, error=error)


def _unrequested(action: str, error: Exception) -> ApprovalRejected:
    """The approval could not be asked for: the action does not run (fails closed)."""
    return _rejection(action, ApprovalDecision(False, "reject", str(error)), error=error)


def _arguments(input_str: str, inputs: dict[str, Any] | None) -> dict[str, Any]:
    """A tool's arguments from what ``on_tool_start`` receives: the dict when given, else
    the input string read as JSON or a Python literal, else the string itself."""
    if inputs is not None:
        return dict(inputs)
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(input_str)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(parsed, dict):
            return {str(k): v for k, v in parsed.items()}
    return {"input": input_str}


class HumanApprovalCallbackHandler(BaseCallbackHandler):
    """Asks a human before the tools it guards run, and blocks until they decide.

    ``tools``: the names to guard, or a predicate ``(name, arguments) -> bool``; ``None``
    guards every tool. ``approver`` (or ``Approver`` options: ``to``, ``channel``, or
    ``approvers`` with ``quorum``, ``escalation``, ``remind_every``; ``wait_time``,
    ``follow_up_time``, ``on_timeout``, ``client``) says whom to ask and how long to wait.
    ``describe(name, arguments)`` may give the request's description.

    Synchronous on purpose, with ``raise_error = True``: an exception from an async
    handler is swallowed when a sync tool runs through ``ainvoke``, and without
    ``raise_error`` a rejection would only be logged while the tool runs anyway. On an
    async path LangChain runs a sync handler in a worker thread, so the wait does not
    block the event loop. The exception is raised before the tool starts, so it bypasses
    the tool's ``handle_tool_error``; ``create_agent``'s tool node hands it to the model
    as the call's result (``ApprovalRejected`` is a ``ToolInvocationError``), and a direct
    ``invoke`` raises it.
    """

    raise_error: bool = True

    def __init__(
        self,
        approver: Approver | None = None,
        *,
        tools: ToolFilter = None,
        describe: Describe | None = None,
        **approver_options: Any,
    ) -> None:
        super().__init__()
        if approver is not None and approver_options:
            raise TypeError("give either approver= or approver options, not both")
        self._approver = approver
        self._approver_options = approver_options
        self.tools = tools
        self.describe = describe
        self.decisions: list[ApprovalDecision] = []
        """Every decision this handler received, in order (for logs and tests)."""

    @property
    def approver(self) -> Approver:
        """Built on first use, so a handler made at import time resolves nothing yet."""
        if self._approver is None:
            self._approver = Approver(**self._approver_options)
        return self._approver

    def guards(self, name: str, arguments: dict[str, Any]) -> bool:
        if self.tools is None:
            return True
        if callable(self.tools):
            return bool(self.tools(name, arguments))
        return name in self.tools

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        arguments = _arguments(input_str, inputs)
        if not self.guards(name, arguments):
            return None
        description = self.describe(name, arguments) if self.describe else None
        request = ApprovalRequest(name, arguments, description)
        key = approval_key(request, kwargs.get("tool_call_id"), metadata)
        try:
            decision = self.approver.request(request, idempotency_key=key)
        except HumanWireError as exc:
            raise _unrequested(name, exc) from exc
        self.decisions.append(decision)
        if not decision.approved:
            raise _rejection(name, decision)
        return None


def approval_key(
    request: ApprovalRequest, tool_call_id: str | None, metadata: dict[str, Any] | None
) -> str | None:
    """The approval request's Idempotency-Key: one per run of a graph's task, tool call and
    action, so a re-run of that task (a retried step, a resumed graph) gets the first
    decision back, while another run reusing the call id (models and fakes reuse
    ``call_1``), or another action under it, is asked afresh. Outside a graph (a tool
    invoked by hand) nothing ties a re-run to its first run: ``None``, a fresh key."""
    meta = metadata or {}
    scope = [str(meta[key]) for key in ("thread_id", "langgraph_checkpoint_ns") if meta.get(key)]
    if not tool_call_id or not meta.get("langgraph_checkpoint_ns"):
        return None
    return idempotency_key("approval", "langchain", *scope, tool_call_id, action_digest_of(request))


def _bound_arguments(signature: inspect.Signature, args: Any, kwargs: Any) -> dict[str, Any]:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {"args": list(args), **kwargs}
    bound.apply_defaults()
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        elif name not in ("self", "cls"):
            arguments[name] = value
    return arguments


def _wrap_function(func: F, approver: Callable[[], Approver], description: str | None) -> F:
    signature = inspect.signature(func)
    action = getattr(func, "__name__", "action")

    def ask(args: Any, kwargs: Any) -> ApprovalRequest:
        return ApprovalRequest(action, _bound_arguments(signature, args, kwargs), description)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                decision = await approver().arequest(ask(args, kwargs))
            except HumanWireError as exc:
                raise _unrequested(action, exc) from exc
            if not decision.approved:
                raise _rejection(action, decision)
            return await func(*args, **kwargs)

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            decision = approver().request(ask(args, kwargs))
        except HumanWireError as exc:
            raise _unrequested(action, exc) from exc
        if not decision.approved:
            raise _rejection(action, decision)
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _guard_tool(tool: BaseTool, handler: HumanApprovalCallbackHandler) -> BaseTool:
    callbacks = tool.callbacks
    if callbacks is None:
        combined: Any = [handler]
    elif isinstance(callbacks, list):
        combined = [*callbacks, handler]
    else:  # a callback manager: copy it so the original tool stays unguarded
        combined = callbacks.copy()
        combined.add_handler(handler, inherit=False)
    return tool.model_copy(update={"callbacks": combined})


class _Decorator(Protocol):
    @overload
    def __call__(self, target: ToolT, /) -> ToolT: ...
    @overload
    def __call__(self, target: F, /) -> F: ...


@overload
def require_approval(target: ToolT, /) -> ToolT: ...
@overload
def require_approval(target: F, /) -> F: ...
@overload
def require_approval(
    target: None = None,
    /,
    *,
    approver: Approver | None = None,
    description: str | None = None,
    **approver_options: Any,
) -> _Decorator: ...
def require_approval(
    target: Any = None,
    /,
    *,
    approver: Approver | None = None,
    description: str | None = None,
    **approver_options: Any,
) -> Any:
    """Ask a human before a function or tool runs.

    Works bare (``@require_approval``) or with options
    (``@require_approval(channel="slack", wait_time=120)``), on plain functions (sync or
    async: the async path awaits the async client) and on LangChain tools (a guarded copy
    is returned, with a :class:`HumanApprovalCallbackHandler` attached). Put it *under*
    ``@tool`` and set ``handle_tool_error=True`` on the tool to have a rejection become
    the tool's error message (``ApprovalRejected`` is a ``ToolException``); over
    ``@tool``, or without ``handle_tool_error``, ``create_agent``'s tool node still hands
    it to the model (it is a ``ToolInvocationError`` too), and a direct ``invoke`` raises
    it. The ``Approver``
    is built on first use, so decorating at import time resolves nothing yet.
    """

    if approver is not None and approver_options:
        raise TypeError("give either approver= or approver options, not both")
    # One handler per decoration: its approver (and recipient) is resolved on first use.
    handler = HumanApprovalCallbackHandler(
        approver,
        describe=(lambda _name, _args: description) if description else None,
        **approver_options,
    )

    def decorate(obj: Any) -> Any:
        if isinstance(obj, BaseTool):
            return _guard_tool(obj, handler)
        if not callable(obj):
            raise TypeError(f"require_approval decorates functions and tools, not {obj!r}")
        return _wrap_function(obj, lambda: handler.approver, description)

    if target is not None:
        return decorate(target)
    return decorate
