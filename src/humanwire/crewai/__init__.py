"""humanwire for CrewAI (``pip install "humanwire[crewai]"``).

Tools an agent gets in ``tools=[...]``, approval of tool calls in a Crew (blocking, on
CrewAI's tool-call hooks or by wrapping the tool), and human feedback in a Flow, paused
and resumed from the webhook in any process::

    from crewai import Agent
    from humanwire.crewai import AskHumanSMS, HumanForm, require_approval

    tools = [AskHumanSMS(), HumanForm(), refund]
    agent = Agent(role="support", goal="...", backstory="...", tools=tools)
    with require_approval(tools=["refund"], to="+14155550123"):
        crew.kickoff()

Tools (each one *is* a ``crewai.tools.BaseTool``)
    ``AskHumanSMS``, ``AskHumanWhatsApp``, ``AskHumanSlack``, ``AskHumanEmail`` (send and
    wait for the reply),
    ``NotifyHumanSMS``, ``NotifyHumanWhatsApp``, ``NotifyHumanSlack``, ``NotifyHumanEmail``
    (send, don't wait),
    ``AskHumanChannel(channel_id=...)`` (through a channel card), ``HumanForm`` (fixed or
    model-designed form), ``CallHuman`` (voice call), ``CheckHumanInteraction`` (status and
    result of an earlier interaction).
Approval in a Crew (``humanwire.crewai.approval``)
    ``require_approval(tools=[...])`` (``before_tool_call`` / ``after_tool_call`` hooks),
    ``approval_tool(tool)`` (a wrapper that asks in its body).
Flows (``humanwire.crewai.flow``)
    ``HumanWireFeedback`` (a ``HumanFeedbackProvider`` for ``@human_feedback``: pauses,
    or waits with ``wait=True``), ``read_feedback`` (what a ``@router`` reads),
    ``resume_from_webhook`` / ``resume_flow`` (resume in any process, once),
    ``HumanWireInput`` (an ``input_provider`` for ``Flow.ask``).

Decisions (what CrewAI leaves open, settled here)

- **Tool type.** ``BaseTool`` subclasses configured by keyword, as CrewAI's own tools,
  with the shared names, descriptions and argument schemas. CrewAI renders every tool's
  schema strict (all properties ``required``, ``additionalProperties: false``), so a
  model may send ``""`` for an argument it would leave out; the tools read ``""`` as left
  out (the default recipient, no subtitle, no pattern).
- **Blocking.** CrewAI runs tools through ``_run`` in its own threads, in async crews too,
  so the tools run on the sync client (``_arun`` runs ``_run`` in a thread).
- **Results.** The text for the model. A human who does not answer in time is a normal
  result (the no-response text, or the card's); a missed call too.
- **Failures** are returned, never raised: a service error (bad number, unknown
  interaction, rate limit, unreachable) or a form the service refuses is a
  ``ToolFailure`` (``humanwire: <reason>``, with the service's code), CrewAI's own
  report of a failed tool: the model reads it, ``task.output.tool_failures`` records it,
  ``tool_failure_policy="raise"`` ends the run. A raised exception would make CrewAI's
  text-protocol loop run the tool again (up to three times more), sending each time.
- **No result cache.** A crew with ``cache=True`` reuses a tool's result for the same
  arguments; the tools opt out, or the same question asked twice would get the first
  answer unasked.
- **Approval in a Crew blocks** (CrewAI cannot pause a tool call for another process):
  the approval form goes out and the call waits for the decision. Rejected, the model
  reads ``<tool> was not run: a human rejected it. Reason: <comment>``; an approval that
  cannot be requested refuses the call, with the reason (CrewAI runs a tool whose hook
  raises: the hook never raises).
- **Flows pause.** ``HumanWireFeedback`` sends the form and raises
  ``HumanFeedbackPending``; CrewAI saves the flow in its persistence (pass an explicit
  ``SQLiteFlowPersistence(path)``: the default file depends on the working directory).
  The form's metadata names the flow, the webhook resumes it with the feedback
  ``approve`` / ``reject: <comment>``, and the approval is consumed (by interaction id)
  before the flow resumes: the approved step runs once.
"""

from __future__ import annotations

from humanwire._extras import Extra
from humanwire._tool_kinds import TOOL_CLASS_NAMES
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver

INSTALL_HINT = Extra(
    "humanwire.crewai",
    "crewai",
    "CrewAI (crewai)",
    ("crewai",),
    note=(
        "CrewAI pins pydantic<2.13, openai<3 and mcp<2: give it an environment of its own, "
        "apart from humanwire[openai-agents] and humanwire[mcp]"
    ),
).require()

from .approval import (  # noqa: E402
    ApprovalTool,
    ToolApproval,
    approval_tool,
    require_approval,
)
from .flow import (  # noqa: E402
    HumanWireFeedback,
    HumanWireInput,
    ResumedFlow,
    feedback_text,
    read_feedback,
    resume_flow,
    resume_from_webhook,
)
from .ledger import ApprovalLedger, FileLedger, MemoryLedger, SQLiteLedger  # noqa: E402
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import (  # noqa: E402
    HumanWireTool,
)

__all__ = [
    "INSTALL_HINT",
    "ApprovalDecision",
    "ApprovalLedger",
    "ApprovalRequest",
    "ApprovalTool",
    "Approver",
    "FileLedger",
    "HumanWireFeedback",
    "HumanWireInput",
    "HumanWireTool",
    "MemoryLedger",
    "ResumedFlow",
    "SQLiteLedger",
    "ToolApproval",
    "approval_tool",
    "feedback_text",
    "read_feedback",
    "require_approval",
    "resume_flow",
    "resume_from_webhook",
    *TOOL_CLASS_NAMES,
]
