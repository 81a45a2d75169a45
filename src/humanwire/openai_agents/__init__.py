"""humanwire for the OpenAI Agents SDK (``pip install "humanwire[openai-agents]"``).

Tools an agent gets in ``tools=[...]``, and human approval of tool calls on the SDK's own
seam (``needs_approval`` and the run's interruptions), in process or resumed from a
webhook in another process::

    from agents import Agent
    from humanwire.openai_agents import AskHumanSMS, HumanForm, require_approval, run_with_approvals

    agent = Agent(name="ops", tools=[AskHumanSMS(), HumanForm(), require_approval(refund)])
    result = await run_with_approvals(agent, "Refund order 1042 if the customer agrees.")

Tools (each one *is* an ``agents.FunctionTool``)
    one per row of the tool table (``humanwire._tool_kinds.TOOL_TABLE``): an
    ``AskHuman<Channel>`` and a ``NotifyHuman<Channel>`` per channel (``AskHumanSMS``…),
    ``AskHumanChannel(channel_id)``, ``HumanForm``, ``CallHuman``,
    ``CheckHumanInteraction``.
Approval
    ``require_approval(tool)`` / ``ApprovalGate`` (the ``needs_approval`` policy that sends
    the form), ``run_with_approvals`` (the in-process loop), and in
    :mod:`humanwire.openai_agents.durable`: ``run_until_approval``, ``resume_from_webhook``,
    ``resume_expired``, ``resume_run``, ``FilePausedRunStore``.

Decisions (what the SDK leaves open, settled here)

- **Tool type.** Subclasses of ``FunctionTool`` built from the shared plain schemas (the
  LangChain and MCP tools' names, descriptions and argument schemas), not
  ``@function_tool`` on generated functions: the schema a model reads is exactly the
  shared one, and arguments are validated by the same pydantic models.
- **Non-strict schemas** (``strict_json_schema=False``). OpenAI's strict mode requires
  every property and forbids leaving one out; the shared schemas express "the default
  recipient" or "no pattern" by leaving the argument out, so strict mode would make a
  model invent values for them. Arguments are validated here instead, and a bad one
  comes back to the model saying what to fix.
- **Results.** The text for the model. A human who does not answer in time is a normal
  result (the no-response text, or the card's); a missed call too. Do not set the SDK's
  ``timeout_seconds`` below ``wait_time``: the service ends the wait itself.
- **Failures.** A service error (bad number, unknown interaction, rate limit, service
  unreachable) or arguments that do not fit go to the tool's ``failure_error_function``,
  the SDK's own hook (same signature and meaning): by default the model gets
  ``"humanwire: <the service's reason>"`` and the tool's trace span is marked with the
  error; ``failure_error_function=None`` raises, and the SDK ends the run.
- **Recipients and windows** as in the other adapters: ``to``, else
  ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO`` /
  ``HUMANWIRE_EMAIL_TO``, else the
  embedded service's default human; ``expose_recipient=True`` lets the model choose.
  ``wait_time`` (default 300 s) and ``follow_up_time`` are checked at construction.
- **The gate sends, the host waits.** ``needs_approval`` returns a bool and runs once
  per call, so the gate sends the approval form (no held request; open for the
  approver's ``follow_up_time``, default one hour) and says "needs approval"; the host
  (``run_with_approvals`` or a webhook receiver) collects the decision and answers
  ``state.approve(item)`` or ``state.reject(item, rejection_message=...)``, the
  rejection carrying the human's comment. A timeout applies the approver's
  ``default_on_timeout`` (reject unless told otherwise) and says it was a timeout. The
  form offers approve / reject (and "answer instead" with ``allow_respond``), never
  "edit": the SDK cannot run a call with other arguments.
- **Once.** The form's Idempotency-Key derives from the run id, the pause's number and
  the call id: a host asking again about a call its gate already asked about gets the
  same form. A durable resume consumes each decided approval (by interaction id) in its
  store before anything runs; a second resume of the same pause runs nothing.
"""

from __future__ import annotations

from humanwire._extras import Extra
from humanwire._tool_kinds import TOOL_CLASS_NAMES
from humanwire.approval import ApprovalDecision, ApprovalRequest, Approver

INSTALL_HINT = Extra(
    "humanwire.openai_agents", "openai-agents", "the OpenAI Agents SDK (openai-agents)", ("agents",)
).require()

from .approval import (  # noqa: E402
    DEFAULT_APPROVAL_WINDOW,
    ApprovalGate,
    PendingApproval,
    apply_decision,
    rejection_message,
    require_approval,
    run_with_approvals,
)
from .durable import (  # noqa: E402
    DurableOutcome,
    FilePausedRunStore,
    PausedRunStore,
    pause_run,
    resume_expired,
    resume_from_webhook,
    resume_run,
    run_until_approval,
)
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import (  # noqa: E402
    HumanWireTool,
    humanwire_error_message,
)

__all__ = [
    "DEFAULT_APPROVAL_WINDOW",
    "INSTALL_HINT",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalRequest",
    "Approver",
    "DurableOutcome",
    "FilePausedRunStore",
    "HumanWireTool",
    "PausedRunStore",
    "PendingApproval",
    "apply_decision",
    "humanwire_error_message",
    "pause_run",
    "rejection_message",
    "require_approval",
    "resume_expired",
    "resume_from_webhook",
    "resume_run",
    "run_until_approval",
    "run_with_approvals",
    *TOOL_CLASS_NAMES,
]
