"""Human approval of tool calls in a Crew, blocking (CrewAI runs a tool call to its end
in the process that started it: there is no pausing one for another process).

Two ways, each asking through an :class:`~humanwire.approval.Approver` (an approval form
by SMS, WhatsApp or Slack) and holding the call until the person decides:

- :func:`require_approval` gates tools **by name** on CrewAI's own seam, the
  ``before_tool_call`` hooks. Approved, the call runs (with the person's edited
  arguments when the approver allows edits: a before-hook may change the input in
  place). Rejected, the hook blocks the call; CrewAI would then show the model a fixed
  text ("Tool execution blocked by hook"), so a paired ``after_tool_call`` hook puts the
  reason and the person's comment in its place. The hooks are CrewAI's global ones:
  they gate every agent of every crew in the process that calls a tool of that name,
  until :meth:`ToolApproval.unregister` (or the end of a ``with`` block).
- :func:`approval_tool` wraps one tool in another of the same name, description and
  arguments that asks inside its body, then runs the wrapped tool or returns the
  rejection. Only the agents given the wrapped tool are gated.

Both fail closed: an approval that cannot be requested (service unreachable, bad key) is
a refusal, with the reason. (CrewAI runs the tool when a hook raises; the hook here never
raises.)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from crewai.hooks import (
    register_after_tool_call_hook,
    register_before_tool_call_hook,
    unregister_after_tool_call_hook,
    unregister_before_tool_call_hook,
)
from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure
from crewai.utilities.string_utils import sanitize_tool_name
from pydantic import Field, model_validator

from humanwire._pauses import denial_text, unrequested_text
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver
from humanwire.errors import HumanWireError

from .tools import never_cache

if TYPE_CHECKING:
    from crewai.hooks import ToolCallHookContext

__all__ = [
    "ApprovalTool",
    "Describe",
    "ToolApproval",
    "approval_tool",
    "require_approval",
]

logger = logging.getLogger("humanwire.crewai")

Describe = Callable[[str, dict[str, Any]], str | None]
"""``(tool name, arguments) -> the approval form's subtitle`` (``None``: the default)."""

When = Callable[["ToolCallHookContext"], bool]
"""``(hook context) -> whether this call needs approval``."""


def _approver(approver: Approver | None, options: dict[str, Any]) -> Approver:
    if approver is not None and options:
        raise TypeError("give either approver= or approver options, not both")
    return approver if approver is not None else Approver(**options)


class ToolApproval:
    """The ``before_tool_call`` / ``after_tool_call`` hook pair of
    :func:`require_approval`. ``decisions`` holds every decision received, in order."""

    def __init__(
        self,
        tools: Sequence[str | BaseTool],
        approver: Approver | None = None,
        *,
        agents: Sequence[str] | None = None,
        when: When | None = None,
        describe: Describe | None = None,
        **approver_options: Any,
    ) -> None:
        if not tools:
            raise ValueError("name the tools that need approval: tools=[...]")
        names = [tool if isinstance(tool, str) else tool.name for tool in tools]
        # Hooks see the sanitized name (CrewAI's own filter compares the same way).
        self.tools = frozenset(sanitize_tool_name(name) for name in names)
        self.agents = frozenset(agents) if agents else None
        self.approver = _approver(approver, approver_options)
        self.when = when
        self.describe = describe
        self.decisions: list[ApprovalDecision] = []
        self._refused: dict[int, tuple[dict[str, Any], str]] = {}
        self._lock = threading.Lock()
        self._registered = False

    # -- registration ----------------------------------------------------------------------
    def register(self) -> ToolApproval:
        """Add the hooks to CrewAI's global hooks (once)."""
        if not self._registered:
            register_before_tool_call_hook(self.before)
            register_after_tool_call_hook(self.after)
            self._registered = True
        return self

    def unregister(self) -> None:
        """Remove the hooks: the tools run ungated again."""
        unregister_before_tool_call_hook(self.before)
        unregister_after_tool_call_hook(self.after)
        self._registered = False

    def __enter__(self) -> ToolApproval:
        return self.register()

    def __exit__(self, *exc_info: object) -> None:
        self.unregister()

    # -- the hooks -----------------------------------------------------------------------
    def gates(self, context: ToolCallHookContext) -> bool:
        """Whether this call waits for a person."""
        if context.tool_name not in self.tools:
            return False
        role = getattr(context.agent, "role", None)
        if self.agents is not None and role not in self.agents:
            return False
        return self.when is None or bool(self.when(context))

    def before(self, context: ToolCallHookContext) -> bool | None:
        """Ask and wait; ``None`` lets the call run, ``False`` blocks it."""
        try:
            if not self.gates(context):
                return None
        except Exception as exc:  # a failing policy must not open the gate
            logger.exception("approval policy failed for %s", context.tool_name)
            return self._refuse(context, unrequested_text(context.tool_name, exc))
        arguments = dict(context.tool_input)
        description = self.describe(context.tool_name, arguments) if self.describe else None
        try:
            decision = self.approver.request(
                ApprovalRequest(context.tool_name, arguments, description)
            )
        except Exception as exc:
            # CrewAI runs the tool when a hook raises: fail closed here instead.
            if not isinstance(exc, HumanWireError):
                logger.exception("approval of %s could not be requested", context.tool_name)
            return self._refuse(context, unrequested_text(context.tool_name, exc))
        self.decisions.append(decision)
        logger.info("approval of %s: %s", context.tool_name, decision.text)
        if not decision.approved:
            return self._refuse(context, denial_text(context.tool_name, decision))
        if decision.arguments is not None:
            # The person's edit: CrewAI runs the call with the input changed in place.
            context.tool_input.clear()
            context.tool_input.update(decision.arguments)
        return None

    def _refuse(self, context: ToolCallHookContext, text: str) -> bool:
        with self._lock:
            self._refused[id(context.tool_input)] = (context.tool_input, text)
        return False

    def after(self, context: ToolCallHookContext) -> str | None:
        """In place of CrewAI's fixed "blocked by hook" text: why the call did not run.
        CrewAI gives the after hooks the same input dict as the before hooks."""
        with self._lock:
            refused = self._refused.pop(id(context.tool_input), None)
        if refused is None or refused[0] is not context.tool_input:
            return None
        return refused[1]


def require_approval(
    tools: Sequence[str | BaseTool],
    approver: Approver | None = None,
    *,
    agents: Sequence[str] | None = None,
    when: When | None = None,
    describe: Describe | None = None,
    **approver_options: Any,
) -> ToolApproval:
    """Gate the named tools behind a person's approval, through CrewAI's global
    ``before_tool_call`` / ``after_tool_call`` hooks; returns the registered
    :class:`ToolApproval` (``unregister()`` it, or use it in a ``with`` block).

    ``tools`` are tool names or tools. ``approver`` (or its options: ``to``, ``channel``,
    ``wait_time``, ``follow_up_time``, ``default_on_timeout``, ``allow_edit``,
    ``allow_respond``, ``client``) says whom to ask and how long to hold the call.
    ``agents`` limits the gate to agents with those roles; ``when(context)`` to the calls
    it returns true for; ``describe(name, arguments)`` gives the form's subtitle.
    """
    return ToolApproval(
        tools, approver, agents=agents, when=when, describe=describe, **approver_options
    ).register()


# --- the wrapper ------------------------------------------------------------------------


class ApprovalTool(BaseTool):
    """A tool that asks a person before running ``tool`` (see :func:`approval_tool`)."""

    tool: BaseTool = Field(exclude=True)
    approver: Any = Field(exclude=True, repr=False)
    describe: Any = Field(default=None, exclude=True, repr=False)

    @model_validator(mode="after")
    def _configure(self) -> ApprovalTool:
        # A decision is never reused: each call asks.
        self.cache_function = never_cache
        return self

    def _run(self, **arguments: Any) -> Any:
        approver: Approver = self.approver
        description = self.describe(self.name, arguments) if self.describe else None
        try:
            decision = approver.request(ApprovalRequest(self.name, dict(arguments), description))
        except HumanWireError as exc:
            # Fails closed; the failed request is CrewAI's tool failure.
            return ToolFailure(message=unrequested_text(self.name, exc))
        if not decision.approved:
            return denial_text(self.name, decision)
        return self.tool.run(**(decision.arguments or arguments))


def approval_tool(
    tool: BaseTool,
    approver: Approver | None = None,
    *,
    describe: Describe | None = None,
    **approver_options: Any,
) -> ApprovalTool:
    """``tool`` behind a person's approval: a tool of the same name, description and
    arguments whose body asks (the approval form, held until the person decides), then
    runs ``tool`` (with the person's edited arguments when allowed), or returns why it
    did not run: rejected with the comment, answered instead, or no decision in time.
    ``approver`` / its options and ``describe`` as for :func:`require_approval`.
    """
    return ApprovalTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        result_as_answer=tool.result_as_answer,
        tool=tool,
        approver=_approver(approver, approver_options),
        describe=describe,
    )
