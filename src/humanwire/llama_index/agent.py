"""A guarded action for a ``FunctionAgent``: the tool pauses the agent until a person
approves the call, then runs it (or tells the model why it did not)."""

# No ``from __future__ import annotations`` here: FunctionTool finds the ``Context``
# parameter by its real annotation, not a string.

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from llama_index.core.tools import FunctionTool, ToolMetadata
from llama_index.core.tools.utils import create_schema_from_function
from llama_index.core.workflow import Context

from humanwire._pauses import unrequested_text
from humanwire.approval import ApprovalRequest, Approver
from humanwire.errors import HumanWireError

from ._tools import HumanWireFunctionTool
from .workflow import approval_key, request_approval

__all__ = ["approval_tool"]


def approval_tool(
    fn: Callable[..., Any],
    *,
    approver: Approver | None = None,
    name: str | None = None,
    description: str | None = None,
    action_description: str | None = None,
    watch: bool = True,
) -> FunctionTool:
    """Wrap ``fn`` (sync or async) as a tool a person must approve before each call.

    When the agent calls it, the approval form goes to the approver's recipient and the
    agent's run pauses (an ``ApprovalRequiredEvent`` is streamed with the form link) until
    the decision arrives from the service (``watch=True``) or from a webhook resume
    (``watch=False``, see ``humanwire.llama_index.durable``). Approved: ``fn`` runs, with
    the person's edited arguments when they edited them. Rejected, answered instead, or
    timed out under a "reject" default: ``fn`` does not run and the tool returns why, as
    a normal output the model can act on; so too when the approval could not be requested
    (the service stopped, a bad key): ``<tool> was not run: its approval could not be
    requested (humanwire: <reason>).``

    The model sees ``fn``'s parameters (their ``Annotated`` descriptions or docstring).
    """
    tool_name = name or fn.__name__
    schema = create_schema_from_function(tool_name, fn)
    summary = description or (inspect.getdoc(fn) or f"Run {tool_name}.").strip()
    tool_description = (
        f"{summary}\nA person must approve each call before it runs; the call waits for "
        "their decision. If they reject it, it does not run and you get their reason: do "
        "not retry the same call unless they asked for changes."
    )
    is_async = inspect.iscoroutinefunction(fn)

    async def run(**arguments: Any) -> Any:
        if is_async:
            return await fn(**arguments)
        return await asyncio.to_thread(fn, **arguments)

    async def guarded(ctx: Context, **arguments: Any) -> Any:
        request = ApprovalRequest(
            action=tool_name, arguments=arguments, description=action_description
        )
        try:
            decision = await request_approval(
                ctx,
                request,
                approver=approver,
                key=approval_key(tool_name, arguments),
                watch=watch,
            )
        except HumanWireError as exc:
            # Fails closed, and the model knows why (as every adapter's gate says it).
            return unrequested_text(tool_name, exc)
        if not decision.approved:
            return f"{tool_name} was not run. {decision.text}"
        if decision.arguments is not None:
            result = await run(**decision.arguments)
            return (
                f"The person approved {tool_name} with edited arguments "
                f"{decision.arguments}. Result: {result}"
            )
        return await run(**arguments)

    guarded.__name__ = tool_name
    return HumanWireFunctionTool(
        async_fn=guarded,
        metadata=ToolMetadata(name=tool_name, description=tool_description, fn_schema=schema),
    )
