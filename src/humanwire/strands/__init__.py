"""humanwire for Strands Agents (``pip install "humanwire[strands]"``).

Tools an agent gets in ``tools=[...]``, and human approval of tool calls on Strands' own
seams (a ``BeforeToolCallEvent`` hook, interrupts), answered in the run or after a pause,
in any process. Everything goes through the core client; nothing here speaks HTTP::

    from strands import Agent
    from humanwire.strands import AskHumanSMS, HumanForm, HumanWireApprovals

    agent = Agent(tools=[AskHumanSMS(), HumanForm(), send_payment],
                  hooks=[HumanWireApprovals(["send_payment"])])

Tools (``humanwire.strands.tools``)
    ``AskHumanSMS``, ``AskHumanWhatsApp``, ``AskHumanSlack``, ``AskHumanEmail`` (send and
    wait for the reply),
    ``NotifyHumanSMS`` / ``…WhatsApp`` / ``…Slack`` / ``…Email`` (send, don't wait),
    ``AskHumanChannel(channel_id)`` (through a channel card), ``HumanForm`` (fixed or
    model-designed), ``CallHuman``, ``CheckHumanInteraction``: each a Strands
    ``AgentTool`` named, described and shaped as the LangChain and MCP tools.
Approval (``humanwire.strands.approval``)
    ``HumanWireApprovals`` (a ``HookProvider`` on ``BeforeToolCallEvent``): asks by form
    and waits in the run, or pauses the run with a Strands interrupt. ``PausingAskHuman``
    (``ask_human``) and ``pause_for_answer(tool_context, question)``: questions that pause.
Paused runs (``humanwire.strands.durable``)
    ``PausedRuns(store, agent_for, ...)``: ``run`` / ``pause`` send the forms and questions
    without waiting and save the pause; ``resume_from_webhook`` resumes the session's agent
    from the answer's webhook in any process; ``resume`` waits for the answers instead.

Decisions (what Strands leaves open, settled here)

- **Tool type.** ``AgentTool`` subclasses with a hand-written ``tool_spec`` (the shared
  plain schema as ``inputSchema.json``), not ``@tool`` on generated functions: the schema a
  model reads is exactly the shared one, and arguments are validated by the same pydantic
  models, with the field named when they do not fit.
- **Recipients** are fixed when a tool is built: ``to=``, else ``HUMANWIRE_SMS_TO`` /
  ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO``, else (embedded service) the inbox's
  default human; ``expose_recipient=True`` lets the model give one.
- **Clients.** ``client=`` may be a ``HumanWire`` or an ``AsyncHumanWire``; the tools run
  on an async client (the one given, else one per event loop: Strands' sync ``agent(...)``
  runs each call on a loop of its own).
- **Results.** A ``toolResult`` with the text for the model. A human who does not answer
  in time is a success with the no-response text; so is a missed call.
- **Errors, the Strands way.** Arguments that do not fit, a form designed badly, a service
  error (refused, bad key, unknown interaction, rate limit, unreachable): a ``toolResult``
  with ``status: "error"`` and ``humanwire: <reason>`` (the exception goes to
  ``AfterToolCallEvent`` hooks); the model reads it and the run goes on.
- **Approval.** A hook, not an ``InterventionHandler``'s ``Confirm``: ``Confirm`` answers a
  refusal with its fixed ``CONFIRMATION_FAILED: <prompt>``, and the human's comment must
  reach the model. A rejection sets ``cancel_tool`` to the reason with the comment; a
  timeout applies ``default_on_timeout`` and says so; a form that cannot be sent cancels
  the call (fail closed). An approval is about the call as asked: there is no edit
  (``allow_edit=True`` is refused).
- **Pausing.** The hook raises ``event.interrupt("humanwire:approval", reason=…)``; the
  host (``PausedRuns``) sends the form, so the hook has no side effect before the
  interrupt and running it again on resume sends nothing. Strands saves the interrupt in
  the agent's session (``FileSessionManager`` or any other); the answer comes back as the
  interrupt's ``response``.
- **Runs once.** The hook consumes an approval (its interaction id) in a ledger before
  the tool runs; ``PausedRuns`` claims a pause before resuming it, so a repeated webhook
  resumes nothing and a replayed resume cannot run the action again.
- **MCP.** Strands caps ``mcp`` below 2.2, humanwire's MCP server needs 2.3: a Strands
  environment uses these tools directly, not ``humanwire mcp`` or the service's ``/mcp``.
"""

from __future__ import annotations

from humanwire._extras import Extra
from humanwire._pauses import (
    ApprovalLedger,
    FileApprovalLedger,
    MemoryApprovalLedger,
    denial_text,
)
from humanwire._tool_kinds import TOOL_CLASS_NAMES
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver

INSTALL_HINT = Extra(
    "humanwire.strands", "strands", "Strands Agents (strands-agents 1.62 or newer)", ("strands",)
).require()

from .approval import (  # noqa: E402
    APPROVAL_INTERRUPT,
    QUESTION_INTERRUPT,
    HumanWireApprovals,
    PausingAskHuman,
    pause_for_answer,
)
from .durable import (  # noqa: E402
    DurableOutcome,
    FilePausedRunStore,
    PausedRun,
    PausedRuns,
    PausedRunStore,
    PendingInterrupt,
)
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import (  # noqa: E402
    HumanWireTool,
)

__all__ = [
    "APPROVAL_INTERRUPT",
    "INSTALL_HINT",
    "QUESTION_INTERRUPT",
    "ApprovalDecision",
    "ApprovalLedger",
    "ApprovalRequest",
    "Approver",
    "DurableOutcome",
    "FileApprovalLedger",
    "FilePausedRunStore",
    "HumanWireApprovals",
    "HumanWireTool",
    "MemoryApprovalLedger",
    "PausedRun",
    "PausedRunStore",
    "PausedRuns",
    "PausingAskHuman",
    "PendingInterrupt",
    "denial_text",
    "pause_for_answer",
    *TOOL_CLASS_NAMES,
]
