"""humanwire for LangChain and LangGraph (``pip install humanwire[langchain]``).

Tools an agent developer drops into ``tools=[...]``, human approval for tool calls,
and approval checkpoints for LangGraph pipelines. Everything goes through the core
client (``HumanWire`` / ``AsyncHumanWire``); nothing here speaks HTTP itself::

    from humanwire.langchain import AskHumanSMS, HumanForm
    agent = create_agent(model, tools=[AskHumanSMS(), HumanForm()])

Tools
    ``AskHumanSMS``, ``AskHumanWhatsApp``, ``AskHumanSlack``, ``AskHumanEmail`` (send and
    wait for the reply),
    ``NotifyHumanSMS``, ``NotifyHumanWhatsApp``, ``NotifyHumanSlack``, ``NotifyHumanEmail``
    (send, don't wait),
    ``AskHumanChannel(channel_id=...)`` (through a channel card), ``HumanForm`` (fixed or
    model-designed form), ``CallHuman`` (voice call), ``CheckHumanInteraction`` (status
    and result of an earlier interaction), ``HumanWireToolkit(...).get_tools()``.
Approval
    ``HumanApprovalCallbackHandler`` (blocks guarded tools until a human approves),
    ``require_approval`` (decorator for functions and tools),
    ``HumanInTheLoopApprover`` (answers ``HumanInTheLoopMiddleware`` interrupts with forms),
    ``ApprovalCheckpoint`` (LangGraph node: form + ``interrupt()`` + webhook resume).
    The framework-neutral pieces (``ApprovalRequest``, ``ApprovalDecision``, ``Approver``)
    live in ``humanwire.approval``.

Decisions (what the service's specification leaves open, settled here)

- **Configuration.** Each tool takes ``client=`` (a ``HumanWire`` or an ``AsyncHumanWire``)
  and ``async_client=``; a missing one is built on first use from ``HUMANWIRE_API_KEY`` /
  ``HUMANWIRE_BASE_URL`` (the embedded service when no base URL is set). ``invoke`` uses
  the sync client, ``ainvoke`` the async one (a real ``_arun``, not a thread).
- **Recipients.** Fixed at construction so a model cannot text an arbitrary number:
  ``to=``, else ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO`` /
  ``HUMANWIRE_EMAIL_TO``,
  else, on the embedded service (no base URL, or a loopback one such as ``humanwire
  serve``), the inbox's default human (``+12025550100``, slack ``U0HUMAN0001``);
  otherwise construction fails naming the variable to set. ``CallHuman`` calls a phone
  number, so it falls back to ``HUMANWIRE_SMS_TO``. ``expose_recipient=True`` adds an
  optional ``to`` argument for the model (left out, the default recipient applies).
- **Windows.** ``wait_time`` (default 300 s) and ``follow_up_time`` (default none) are
  set at construction and checked against the service's bounds (1-600 s, 1-60000 s):
  out of range is an error at construction, not at the first call.
  ``wait_time=None`` on a message tool sends without waiting (that is what the
  ``NotifyHuman*`` tools are) and returns the interaction id.
- **Results.** ``response_format="content_and_artifact"``: the text for the model, and
  the typed response (``MessageResponse``, ``FormResponse``, ``CallResponse``,
  ``InteractionStatus``) as the artifact. A human who does not answer in time is a
  normal result: the no-response text (the card's, through a channel card) with
  ``status="success"``. A missed call is a normal result too ("did not answer").
  A service error (bad number, unknown interaction, rate limit, unreachable service)
  raises ``ToolException`` with the service's message; ``handle_tool_error`` is on, so
  the agent sees an error ``ToolMessage`` (LangChain gives that path no artifact).
- **Forms.** A fixed form (``title`` and ``fields`` at construction) asks the model only
  for an optional link message; a dynamic one (neither given) lets the model design it
  through a flat schema: field ``id`` optional (derived from the label, made unique),
  ``options`` a list of strings (each is label and value), options on a non-select field
  ignored, a select without options an error the model can fix. The link message gets
  ``{{url}}`` appended when the model leaves it out. WhatsApp forms take no message
  (the service wraps the link in fixed text). The form's subtitle is ``form_description``
  (``description`` is the tool's own, read by the model).
- **Calls.** ``wait_for_call_end=True`` by default: the tool returns the summary. With
  ``False`` it returns the interaction id, to check later with ``CheckHumanInteraction``.
- **Approval.** The form shows the tool name and its arguments readably, a required
  decision, an optional comment. A rejection raises ``ApprovalRejected`` (a
  ``ToolException``) with the comment; a timeout applies ``default_on_timeout`` ("reject"
  unless told otherwise) and the message says it was a timeout, not a human rejection.
  The callback handler is synchronous with ``raise_error=True``; its exception stops the
  tool before it starts, so it bypasses ``handle_tool_error``, but ``create_agent``'s tool
  node hands it to the model as the call's result (it is a ``ToolInvocationError`` too).
  ``require_approval`` under ``@tool`` (with ``handle_tool_error=True``) makes a rejection
  the tool's error message. An approval that cannot be requested (a service error) stops
  the tool the same way, saying so. Each request's Idempotency-Key derives from the
  graph's thread and task, the tool call id and the action.
- **LangGraph.** ``interrupt()`` needs a checkpointer and a ``thread_id``. The node
  re-runs on resume; its form's Idempotency-Key derives from the thread and the node's
  task, so the re-run sends nothing new. The decision is stored in the state as a plain
  dict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from humanwire._extras import Extra
from humanwire._tool_kinds import TOOL_CLASS_NAMES
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver

Extra("humanwire.langchain", "langchain", "langchain-core", ("langchain_core.tools",)).require()

from .approval import ApprovalRejected, HumanApprovalCallbackHandler, require_approval  # noqa: E402
from .toolkit import HumanWireToolkit  # noqa: E402
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import HumanWireTool  # noqa: E402

if TYPE_CHECKING:
    from .checkpoint import ApprovalCheckpoint
    from .middleware import HumanInTheLoopApprover

__all__ = [
    "ApprovalCheckpoint",
    "ApprovalDecision",
    "ApprovalRejected",
    "ApprovalRequest",
    "Approver",
    "HumanApprovalCallbackHandler",
    "HumanInTheLoopApprover",
    "HumanWireTool",
    "HumanWireToolkit",
    "require_approval",
    *TOOL_CLASS_NAMES,
]

# langgraph costs most of a second to import: load it only when these are used.
_LAZY = {
    "ApprovalCheckpoint": ".checkpoint",
    "HumanInTheLoopApprover": ".middleware",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    Extra("humanwire.langchain", "langchain", "LangGraph", ("langgraph.types",)).require()
    return getattr(import_module(module, __name__), name)
