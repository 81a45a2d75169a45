"""humanwire for Google's Agent Development Kit (``pip install "humanwire[google-adk]"``).

Tools an agent gets in ``tools=[...]``, and human approval of tool calls on ADK's own
seam (the tool confirmation), waited for in process or resumed from a webhook in another
process::

    from google.adk.agents import LlmAgent
    from humanwire.google_adk import AskHumanSMS, HumanForm, require_approval

    agent = LlmAgent(name="ops", model="gemini-2.5-flash",
                     tools=[AskHumanSMS(), HumanForm(), require_approval(refund, wait=True)])

Tools (each one *is* a ``google.adk.tools.BaseTool``)
    one per row of the tool table (``humanwire._tool_kinds.TOOL_TABLE``): an
    ``AskHuman<Channel>`` and a ``NotifyHuman<Channel>`` per channel (``AskHumanSMS``…),
    ``AskHumanChannel(channel_id)``, ``HumanForm``, ``CallHuman``,
    ``CheckHumanInteraction``.
Approval
    ``require_approval(tool)`` / ``ApprovalGate`` (a tool in the wrapped one's place that
    asks first), and in :mod:`humanwire.google_adk.durable`: ``run_until_approval``,
    ``resume_from_webhook``, ``resume_session``, ``resume_expired``, with the approval
    ledger every adapter shares: ``FileApprovalLedger`` (also named ``FileClaimStore``)
    or any ``ApprovalLedger``.

Decisions (what ADK leaves open, settled here)

- **Tool type.** ``BaseTool`` subclasses whose ``FunctionDeclaration`` carries the shared
  JSON schema as ``parameters_json_schema`` (ADK's own MCP tools do the same), not
  ``FunctionTool`` over generated functions: the schema a model reads is exactly the
  shared one, and arguments are validated by the same pydantic models.
- **Results.** The text for the model (ADK hands it over as ``{"result": <text>}``). A
  human who does not answer in time is a normal result (the no-response text, or the
  card's); a missed call too.
- **Failures.** A service error or arguments that do not fit answer
  ``{"error": "humanwire: <the service's reason>"}``, ADK's own shape for a failed call
  (its ``FunctionTool`` answers bad arguments and rejected confirmations so; its
  telemetry records it as a tool error); ``raise_errors=True`` raises instead, for an
  ``on_tool_error_callback``.
- **Recipients and windows** as in the other adapters: ``to``, else
  ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO`` /
  ``HUMANWIRE_EMAIL_TO``, else the
  embedded service's default human; ``expose_recipient=True`` lets the model choose.
  ``wait_time`` (default 300 s) and ``follow_up_time`` are checked at construction.
- **The gate asks by hand** with ``tool_context.request_confirmation(hint, payload)``
  rather than ADK's ``require_confirmation``, whose rejection text is fixed: a rejection
  reaches the model with the human's comment. The decision is read from the service
  whenever ADK calls the gate again; an answer to the confirmation only wakes the call.
- **In process or paused.** ``wait=True``: the call awaits the decision (ADK runs tools as
  tasks on its loop, with no time limit). Default: the run pauses at ADK's confirmation
  and the session service holds it; a webhook receiver resumes it in any process.
- **Once.** The form's Idempotency-Key derives from the app, user, session, invocation
  and call: ADK calling the gate again gets the same form. A durable resume consumes each
  decided approval (by interaction id) in the ledger before it answers; a second resume
  of the same pause answers nothing.
"""

from __future__ import annotations

from humanwire._extras import Extra
from humanwire._pauses import ApprovalLedger, FileApprovalLedger
from humanwire._pauses import denial_text as rejection_message
from humanwire._tool_kinds import TOOL_CLASS_NAMES
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver

INSTALL_HINT = Extra(
    "humanwire.google_adk",
    "google-adk",
    "Google's Agent Development Kit (google-adk)",
    ("google.adk.tools",),
).require()

from .approval import (  # noqa: E402
    ApprovalGate,
    PausedApproval,
    Policy,
    paused_approvals,
    require_approval,
)
from .durable import (  # noqa: E402
    ClaimStore,
    DurableOutcome,
    FileClaimStore,
    resume_expired,
    resume_from_webhook,
    resume_session,
    run_until_approval,
)
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import (  # noqa: E402
    HumanWireTool,
    humanwire_error_response,
)

__all__ = [
    "INSTALL_HINT",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalLedger",
    "ApprovalRequest",
    "Approver",
    "ClaimStore",
    "DurableOutcome",
    "FileApprovalLedger",
    "FileClaimStore",
    "HumanWireTool",
    "PausedApproval",
    "Policy",
    "humanwire_error_response",
    "paused_approvals",
    "rejection_message",
    "require_approval",
    "resume_expired",
    "resume_from_webhook",
    "resume_session",
    "run_until_approval",
    *TOOL_CLASS_NAMES,
]
