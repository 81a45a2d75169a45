"""humanwire for Pydantic AI (``pip install "humanwire[pydantic-ai]"``; Python 3.11+).

Tools an agent developer drops into ``tools=[...]`` or ``toolsets=[...]``, and human
approval on Pydantic AI's deferred-tool seam, answered in the run or after a pause, in
any process. Everything goes through the core client; nothing here speaks HTTP itself::

    from pydantic_ai import Agent
    from humanwire.pydantic_ai import AskHumanSMS, HumanForm

    agent = Agent("openai:gpt-5", tools=[AskHumanSMS(), HumanForm()])

Tools (``humanwire.pydantic_ai.tools``)
    ``AskHumanSMS``, ``AskHumanWhatsApp``, ``AskHumanSlack``, ``AskHumanEmail`` (send and
    wait for the reply),
    ``NotifyHumanSMS`` / ``…WhatsApp`` / ``…Slack`` / ``…Email`` (send, don't wait),
    ``AskHumanChannel(channel_id)`` (through a channel card), ``HumanForm`` (fixed or
    model-designed), ``CallHuman``, ``CheckHumanInteraction``: each a ``pydantic_ai.Tool``
    named, described and shaped as the LangChain and MCP tools (``ask_human_sms``, …).
    ``HumanWireToolset(...)`` is a ``FunctionToolset`` of them with shared options.
Approval, in the run (``humanwire.pydantic_ai.approval``)
    ``HumanApprovals`` (a capability): answers deferred calls as they come, approvals by
    form, ``CallDeferred(kind="question")`` calls by text message, and waits.
Approval, paused (``humanwire.pydantic_ai.durable``)
    ``PausedRuns(store, ...)``: ``run`` / ``pause`` send the forms and questions without
    waiting and save the run; ``resume_from_webhook`` resumes it from the answer's webhook
    in any process; ``resume`` waits for the answers instead.

Decisions (what Pydantic AI leaves open, settled here)

- **Recipients** are fixed when a tool is built, as for LangChain: ``to=``, else
  ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO`` /
  ``HUMANWIRE_EMAIL_TO``, else (embedded
  service) the inbox's default human; ``expose_recipient=True`` lets the model give one.
- **Clients.** ``client=`` may be a ``HumanWire`` or an ``AsyncHumanWire``; the tools run
  on an async client (the one given, else one per event loop on the sync client's
  service and account, else from the environment).
- **Results.** The text for the model; the typed response (``MessageResponse``,
  ``FormResponse``, ``CallResponse``, ``InteractionStatus``) as ``ToolReturn.metadata``,
  kept in the history and never sent to the model. A human who does not answer in time is
  a normal result (the no-response text); so is a missed call.
- **Errors.** Arguments that do not fit the schema, and a form the model designed badly,
  are ``ModelRetry`` (``humanwire: invalid arguments: <field>: <problem>``): the model is
  asked to fix its call, within the tool's retry budget. A service error (refused, bad
  key, unknown interaction, rate limit, unreachable) is ``ToolFailed`` (``humanwire:
  <reason>``): Pydantic AI's terminal tool failure, which the model sees and adapts to
  without a retry prompt and without ending the run. A retry prompt would be wrong for a
  401 or an outage: asking again does not mend them.
- **Approval.** The form shows the tool name and its arguments readably, approve / reject
  and an optional comment (edit, with ``allow_edit=True``, becomes
  ``ToolApproved(override_args=…)``). A rejection is ``ToolDenied`` whose message carries
  the reason and the human's comment; a timeout applies ``default_on_timeout`` ("reject"
  unless told otherwise) and says it was a timeout. An approval that cannot be sent is
  denied: the tool never runs unapproved.
- **Runs once.** The approved call's ``DeferredToolResults.metadata`` carries the
  approval's interaction id; ``ApprovalGuard`` (part of ``HumanApprovals`` and of every
  ``PausedRuns`` resume) consumes it in a ledger before the tool runs, and a consumed
  approval stops a second run with ``ToolFailed``. ``PausedRuns`` also claims a paused
  run before resuming it, so a repeated webhook resumes nothing.
- **Metadata.** Forms and questions carry the run's keys: ``pydantic_ai_run_id`` and
  ``pydantic_ai_tool_call_id`` (and, when paused, ``humanwire_resume: pydantic_ai``, so
  LangGraph's and LlamaIndex's receivers leave them alone and this one leaves theirs).
"""

from __future__ import annotations

from humanwire._extras import Extra
from humanwire._tool_kinds import TOOL_CLASS_NAMES
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver

INSTALL_HINT = Extra(
    "humanwire.pydantic_ai",
    "pydantic-ai",
    "Pydantic AI (pydantic-ai-slim 2.68 or newer, Python 3.11+)",
    ("pydantic_ai",),
).require()

from .approval import (  # noqa: E402
    ApprovalGuard,
    ApprovalLedger,
    FileApprovalLedger,
    HumanApprovals,
    MemoryApprovalLedger,
    denial_text,
)
from .durable import (  # noqa: E402
    DurableOutcome,
    FilePausedRunStore,
    PausedRun,
    PausedRuns,
    PausedRunStore,
    PendingCall,
)
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import (  # noqa: E402
    HumanWireTool,
)
from .toolset import HumanWireToolset  # noqa: E402

__all__ = [
    "INSTALL_HINT",
    "ApprovalDecision",
    "ApprovalGuard",
    "ApprovalLedger",
    "ApprovalRequest",
    "Approver",
    "DurableOutcome",
    "FileApprovalLedger",
    "FilePausedRunStore",
    "HumanApprovals",
    "HumanWireTool",
    "HumanWireToolset",
    "MemoryApprovalLedger",
    "PausedRun",
    "PausedRunStore",
    "PausedRuns",
    "PendingCall",
    "denial_text",
    *TOOL_CLASS_NAMES,
]
