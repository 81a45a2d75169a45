"""LlamaIndex adapters: humanwire's channels, forms and calls as tools, and human approval
inside workflows and agents. Needs the extra: ``pip install "humanwire[llama-index]"``.

- :class:`HumanWireToolSpec` — ``ask_human_sms``, ``ask_human_whatsapp``,
  ``ask_human_slack``, ``ask_human_channel`` (with ``channel_id=``), ``notify_human``,
  ``ask_human_form``, ``call_human``, ``check_human_interaction``; each with a sync and an
  async function. ``to_tool_list()`` gives the ``FunctionTool`` list.
- :func:`request_approval` — inside a workflow step: send an approval form and wait for
  the decision (:class:`ApprovalRequiredEvent` out, :class:`ApprovalResponseEvent` in).
- :mod:`humanwire.llama_index.durable` — save a run paused at an approval, exit, resume it
  from the ``approval.decided`` webhook.
- :func:`approval_tool` — a ``FunctionAgent`` tool that runs its action only once a person
  approves.

Decisions:

- Recipients are fixed when the tools are made, never invented by the model: ``to`` (a
  phone number, for sms, whatsapp and calls), ``whatsapp_to``, ``slack_to``; otherwise
  ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO``; otherwise, on
  the embedded service, the inbox's default human (+12025550100, slack U0HUMAN0001);
  otherwise the call fails naming the variable. ``expose_recipients=True`` adds an
  optional ``to`` argument for the model.
- The ``ask_*`` tools hold the request open for ``wait_time`` (default 300 s). A human who
  does not answer in time is a normal output — the no-response text ("Human did not
  respond. Continue where you left off.") — never an error.
- A service error (bad number, a form the service refuses, unknown interaction, service
  unreachable) and arguments that do not fit the tool's schema become
  ``ToolOutput(is_error=True)`` with the reason, from ``tool.call`` and ``tool.acall``
  alike; the spec's methods called directly raise the ``humanwire.errors`` exception.
- ``ask_human_form`` sends the fixed form given as ``form_title`` / ``form_fields``, or,
  without them, a form the model designs (title and fields, validated by the same wire
  models the service uses). The link goes by ``form_channel`` (sms by default).
- ``call_human`` waits for the call to end by default (``wait_for_call_end=False`` returns
  the interaction id at once); ``transfer_to``, ``language`` and ``voice`` are fixed.
- Approvals in workflows wait for a form that stays open for the approver's
  ``follow_up_time`` (default one hour), not for a held HTTP request; the step waits with
  no timeout of its own, and a workflow with a shorter timeout is refused up front (make
  it with ``timeout=None``). An expired form is the approver's timeout default
  (``reject`` unless configured), reported with ``timed_out=True``, not an exception.
- The form is sent once per approval even though LlamaIndex replays a waiting step: its
  interaction is kept in the run's state (``ctx.store``, key ``humanwire_approvals``),
  which also travels with a durable run's saved context. A workflow with a typed state
  model needs the field ``humanwire_approvals: dict[str, Any] = {}`` (it is told so
  before anything is sent).
- Live approvals are driven by the service: a watcher long-polls the interaction (60 s
  per request) and sends the decision into the run. A run stopped before the decision
  leaves its watcher polling until the form closes.
- Durable approvals (``watch=False``) resume from the ``approval.decided`` webhook
  (signature verified when given the secret); a retried delivery finds nothing to
  resume. An expired form sends no webhook: ``resume_expired`` applies the timeout
  default to such runs.
- Given only a sync client (or only an async one), the adapter makes its twin for the
  same service and account — agents call the async path — never a client from the
  environment.
"""

from __future__ import annotations

from humanwire._extras import Extra

INSTALL_HINT = Extra(
    "humanwire.llama_index", "llama-index", "LlamaIndex", ("llama_index.core",)
).require()

from .agent import approval_tool  # noqa: E402
from .durable import (  # noqa: E402
    DurableOutcome,
    FilePausedRunStore,
    PausedRunStore,
    resume_approval,
    resume_expired,
    resume_from_webhook,
    run_until_approval,
)
from .tool_spec import HumanWireToolSpec, describe_status  # noqa: E402
from .workflow import (  # noqa: E402
    DEFAULT_APPROVAL_WINDOW,
    ApprovalError,
    ApprovalRequiredEvent,
    ApprovalResponseEvent,
    decision_from_status,
    request_approval,
    watch_approval,
)

__all__ = [
    "DEFAULT_APPROVAL_WINDOW",
    "INSTALL_HINT",
    "ApprovalError",
    "ApprovalRequiredEvent",
    "ApprovalResponseEvent",
    "DurableOutcome",
    "FilePausedRunStore",
    "HumanWireToolSpec",
    "PausedRunStore",
    "approval_tool",
    "decision_from_status",
    "describe_status",
    "request_approval",
    "resume_approval",
    "resume_expired",
    "resume_from_webhook",
    "run_until_approval",
    "watch_approval",
]
