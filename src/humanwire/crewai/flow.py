"""Human feedback in CrewAI Flows through humanwire, paused and resumed in any process.

- :class:`HumanWireFeedback` is a ``HumanFeedbackProvider`` for ``@human_feedback(...,
  provider=...)``. It sends an approval form (or, with ``question=True``, a text
  question) and by default **pauses** the flow: it raises ``HumanFeedbackPending``, so
  CrewAI saves the flow's state and pending context in the flow's persistence and
  ``kickoff()`` returns the pending object. With ``wait=True`` it holds instead and
  returns the decision in the run.
- The form's ``metadata`` names the flow (``humanwire_resume: crewai``,
  ``crewai_flow_id``, ``crewai_method``), so :func:`resume_from_webhook`, in any process,
  finds it from the ``form.received`` (or ``message.received``) delivery alone and calls
  ``Flow.from_pending(flow_id, persistence).resume(feedback)``.
- The feedback text is ``"approve"`` or ``"reject"``, then ``": <the person's comment>"``
  when there is one (see :func:`feedback_text`); a ``@router`` reads it back with
  :func:`read_feedback`. No ``emit=`` is needed (CrewAI sends any ``emit=`` feedback to
  an LLM to classify, even an exact match).
- **Runs once.** Before resuming, the approval is consumed in a ledger by the form's
  interaction id (by default a table in the flow's own SQLite file), so a repeated or
  concurrent delivery resumes nothing, even if the flow's pending state were still there.
- :class:`HumanWireInput` is a Flow ``input_provider``: ``self.ask(question)`` texts the
  person and returns their reply (``None`` when nobody answers in time).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from crewai.flow.async_feedback import HumanFeedbackPending, PendingFeedbackContext
from crewai.flow.human_feedback import HumanFeedbackResult
from crewai.flow.input_provider import InputResponse
from crewai.flow.persistence.base import FlowPersistence
from pydantic import BaseModel

from humanwire._pauses import idempotency_key, parse_delivery
from humanwire.approval import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    Channel,
    check_follow_up_time,
    check_wait_time,
    decision_from_approval,
    decision_from_values,
    resolve_recipient,
    timeout_decision,
)
from humanwire.errors import AlreadyConsumedError, HumanWireError, NotApprovedError
from humanwire.types import (
    METADATA_MAX_VALUE_LENGTH,
    ApprovalDecidedEvent,
    Event,
    FormReceivedEvent,
    InteractionStatus,
    MessageReceivedEvent,
    MessageResponse,
)

from .ledger import ApprovalLedger, SQLiteLedger

if TYPE_CHECKING:
    from crewai.flow.flow import Flow

    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = [
    "DEFAULT_PAUSE_WINDOW",
    "FLOW_KEY",
    "INTERACTION_KEY",
    "METHOD_KEY",
    "RESUME_CREWAI",
    "RESUME_KEY",
    "TIMEOUT_NOTE",
    "HumanWireFeedback",
    "HumanWireInput",
    "ResumedFlow",
    "default_ledger",
    "feedback_text",
    "parse_delivery",
    "read_feedback",
    "resume_flow",
    "resume_from_webhook",
]

logger = logging.getLogger("humanwire.crewai")

RESUME_KEY = "humanwire_resume"
RESUME_CREWAI = "crewai"
FLOW_KEY = "crewai_flow_id"
METHOD_KEY = "crewai_method"
"""The send's metadata keys: a webhook names the paused flow and its method by itself."""

INTERACTION_KEY = "humanwire_interaction_id"
KIND_KEY = "humanwire_kind"
DEFAULT_KEY = "humanwire_default_on_timeout"
"""Keys the provider adds to the pending context's metadata (it travels with the paused
flow and comes back as ``HumanFeedbackResult.metadata``)."""

DEFAULT_PAUSE_WINDOW = 3600.0
"""Seconds a paused flow's form or question stays open when the approver sets no
``follow_up_time``: a paused flow waits longer than a held request."""

TIMEOUT_NOTE = "no approval decision arrived in time (timeout)"
"""The comment of a decision the timeout default made (see :func:`feedback_text`)."""

Kind = Literal["approval", "question"]


# --- the feedback text ------------------------------------------------------------------


USED_NOTE = "its approval was used already, so it ran before (not run again)"
"""The feedback of an approval consumed already (a repeated step)."""


def feedback_text(decision: ApprovalDecision) -> str:
    """The decision as the feedback a flow resumes with: ``approve`` or ``reject``,
    followed by ``": <comment>"`` when the person wrote one. A timeout says
    ``"<the default>: no approval decision arrived in time (timeout)"``; an answer
    instead of a decision (``allow_respond``) ``"respond: <answer>"``."""
    if decision.decision == "consumed":
        return f"reject: {USED_NOTE}"
    if decision.timed_out:
        head = "approve" if decision.approved else "reject"
        return f"{head}: {TIMEOUT_NOTE}"
    if decision.decision == "respond":
        head = "respond"
    else:
        head = "approve" if decision.approved else "reject"
    return f"{head}: {decision.comment}" if decision.comment else head


def read_feedback(feedback: HumanFeedbackResult | str) -> ApprovalDecision:
    """The decision a feedback text (or a ``HumanFeedbackResult``) carries; what a
    ``@router`` reads::

        @router(propose)
        def decide(self, result: HumanFeedbackResult) -> str:
            return "approved" if read_feedback(result).approved else "rejected"

    Anything but ``approve`` (typed by a person through another provider, say) is a
    rejection: approval fails closed. The interaction id is the approval form's when the
    flow was resumed from humanwire.
    """
    interaction_id = ""
    if isinstance(feedback, HumanFeedbackResult):
        value = (feedback.metadata or {}).get(INTERACTION_KEY)
        interaction_id = value if isinstance(value, str) else ""
        text = feedback.feedback
    else:
        text = feedback
    head, _, rest = text.strip().partition(":")
    kind = head.strip().lower()
    comment = rest.strip() or None
    if comment == TIMEOUT_NOTE and kind in ("approve", "reject"):
        return timeout_decision(
            "approve" if kind == "approve" else "reject", interaction_id=interaction_id
        )
    values = {"decision": kind, "comment": comment or ""}
    return decision_from_values(values, interaction_id=interaction_id)


# --- sending ------------------------------------------------------------------------------


def _review_arguments(output: Any) -> dict[str, Any]:
    """The reviewed method output as the form shows it: its fields, or one ``output``."""
    if isinstance(output, BaseModel):
        output = output.model_dump(mode="json")
    if isinstance(output, Mapping):
        return {str(key): value for key, value in output.items()}
    return {"output": output}


def _resume_metadata(context: PendingFeedbackContext) -> dict[str, str]:
    metadata = {RESUME_KEY: RESUME_CREWAI, FLOW_KEY: context.flow_id}
    if len(context.method_name) <= METADATA_MAX_VALUE_LENGTH:
        metadata[METHOD_KEY] = context.method_name
    if not context.flow_id or len(context.flow_id) > METADATA_MAX_VALUE_LENGTH:
        raise ValueError(
            f"the flow id must be 1 to {METADATA_MAX_VALUE_LENGTH} characters to travel in "
            f"the send's metadata, got {len(context.flow_id)}"
        )
    return metadata


def _idempotency_key(kind: Kind, context: PendingFeedbackContext) -> str:
    """One send per feedback point (the flow, its method and when it asked), however
    often the send is retried; a loop that asks again later sends anew."""
    moment = context.requested_at.isoformat()
    return idempotency_key(kind, "crewai", context.flow_id, context.method_name, moment)


class HumanWireFeedback:
    """A ``HumanFeedbackProvider`` asking a person through humanwire.

    ``approver`` (or its options: ``to``, ``channel``, ``wait_time``, ``follow_up_time``,
    ``default_on_timeout``, ``allow_respond``, ``client``) says whom to ask. The approval
    form shows the reviewed output (a mapping's fields, else one ``output`` value), the
    ``@human_feedback`` message as its subtitle, approve / reject and a comment; its
    title names ``action`` (default: the method's name). ``question=True`` sends the
    message and the output as a text question instead, and the reply is the feedback.

    By default the flow **pauses**: the form goes out without holding the request (open
    for ``window`` seconds: the approver's ``follow_up_time``, else one hour) and
    ``HumanFeedbackPending`` is raised; resume it with :func:`resume_from_webhook` or
    :func:`resume_flow`. ``wait=True`` holds instead (the approver's ``wait_time``, at
    most 600 s) and returns the feedback in the run.

    An approval that cannot be sent is a rejection (``"reject: its approval could not be
    requested (...)"``): the flow goes on along its rejected path. A question that
    cannot be sent raises the ``HumanWireError``.
    """

    def __init__(
        self,
        approver: Approver | None = None,
        *,
        question: bool = False,
        wait: bool = False,
        window: float | None = None,
        action: str | None = None,
        **approver_options: Any,
    ) -> None:
        if approver is not None and approver_options:
            raise TypeError("give either approver= or approver options, not both")
        self.approver = approver if approver is not None else Approver(**approver_options)
        self.kind: Kind = "question" if question else "approval"
        self.wait = wait
        window = window or self.approver.follow_up_time or DEFAULT_PAUSE_WINDOW
        self.window = cast(float, check_follow_up_time(window, name="window"))
        self.action = action

    # The provider protocol -------------------------------------------------------------
    def request_feedback(self, context: PendingFeedbackContext, flow: Flow[Any]) -> str:
        if self.kind == "question":
            return self._ask(context)
        return self._approve(context)

    def _approval(self, context: PendingFeedbackContext) -> ApprovalRequest:
        return ApprovalRequest(
            self.action or context.method_name,
            _review_arguments(context.method_output),
            context.message or None,
        )

    def _approve(self, context: PendingFeedbackContext) -> str:
        approver = self.approver
        action = self.action or context.method_name
        request = self._approval(context)
        try:
            kwargs = approver.approval_kwargs(
                request,
                wait=self.wait,
                window=self.window,
                idempotency_key=_idempotency_key("approval", context),
                metadata=_resume_metadata(context),
            )
            response = approver.client.approvals.create(**kwargs)
            if not self.wait:
                return self._pause(context, response.interaction_id, response.approval_url)
            # Used once: consumed before the flow goes on with it.
            decision = approver.consume(approver.decided(response), request)
        except HumanWireError as exc:
            logger.warning("approval of %s could not be requested: %s", action, exc)
            return f"reject: its approval could not be requested (humanwire: {exc})"
        return feedback_text(decision)

    def _question_text(self, context: PendingFeedbackContext) -> str:
        output = context.method_output
        message = str(context.message)
        if output is None or output == "":
            return message
        shown = output if isinstance(output, str) else str(_review_arguments(output))
        return f"{message}\n\n{shown}"

    def _ask(self, context: PendingFeedbackContext) -> str:
        approver = self.approver
        windows: dict[str, float] = {}
        if self.wait:
            windows["wait_time"] = approver.wait_time
            if approver.follow_up_time is not None:
                windows["follow_up_time"] = approver.follow_up_time
        else:
            windows["follow_up_time"] = self.window
        response: MessageResponse = getattr(approver.client.messages, approver.channel)(
            to=approver.to,
            message=self._question_text(context),
            metadata=_resume_metadata(context),
            idempotency_key=_idempotency_key("question", context),
            **windows,
        )
        if not self.wait:
            return self._pause(context, response.interaction_id, None)
        return response.reply if response.responded and response.reply is not None else ""

    def _pause(self, context: PendingFeedbackContext, interaction_id: str, link: str | None) -> str:
        # A new dict: the decorator's own metadata dict may be the one the context holds.
        context.metadata = {
            **(context.metadata or {}),
            INTERACTION_KEY: interaction_id,
            KIND_KEY: self.kind,
            DEFAULT_KEY: self.approver.default_on_timeout,
        }
        callback: dict[str, Any] = {"interaction_id": interaction_id}
        if link:
            callback["form_url"] = link
        raise HumanFeedbackPending(context=context, callback_info=callback)


# --- Flow.ask ---------------------------------------------------------------------------


class HumanWireInput:
    """A Flow ``input_provider``: ``self.ask(message)`` texts the person on ``channel``
    and returns their reply, or ``None`` when nobody answers within ``wait_time`` (what
    ``ask`` returns on a timeout). The response metadata names the interaction."""

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        channel: Channel = "sms",
        to: str | None = None,
        wait_time: float = 300.0,
        follow_up_time: float | None = None,
    ) -> None:
        if channel not in ("sms", "whatsapp", "slack"):
            raise ValueError("channel must be sms, whatsapp or slack")
        self._client = client
        self.channel: Channel = channel
        self.to = resolve_recipient(channel, to, client)
        self.wait_time = cast(float, check_wait_time(wait_time))
        self.follow_up_time = check_follow_up_time(follow_up_time)

    @property
    def client(self) -> HumanWire:
        from humanwire._client import AsyncHumanWire, sync_client_for

        given = self._client
        if isinstance(given, AsyncHumanWire):
            self._client = sync_client_for(None, given)
        else:
            self._client = sync_client_for(given, None)
        return self._client

    def request_input(
        self, message: str, flow: Flow[Any], metadata: dict[str, Any] | None = None
    ) -> InputResponse | None:
        windows: dict[str, float] = {"wait_time": self.wait_time}
        if self.follow_up_time is not None:
            windows["follow_up_time"] = self.follow_up_time
        flow_id = getattr(flow, "flow_id", None)
        labels = {RESUME_KEY: RESUME_CREWAI, FLOW_KEY: flow_id} if flow_id else None
        response: MessageResponse = getattr(self.client.messages, self.channel)(
            to=self.to, message=message, metadata=labels, **windows
        )
        if not response.responded or response.reply is None:
            return None
        return InputResponse(
            text=response.reply,
            metadata={INTERACTION_KEY: response.interaction_id, "channel": self.channel},
        )


# --- resuming ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ResumedFlow:
    """A paused flow resumed: the flow object and what ``resume`` returned (the flow's
    result, or ``HumanFeedbackPending`` when it paused again at its next feedback)."""

    flow_id: str
    flow: Flow[Any]
    result: Any

    @property
    def paused(self) -> bool:
        return isinstance(self.result, HumanFeedbackPending)


def default_ledger(persistence: FlowPersistence) -> ApprovalLedger:
    """Where approvals are consumed when no ``ledger`` is given: a table in the SQLite
    file of a ``SQLiteFlowPersistence``. Any other persistence needs its own (a
    ``FileLedger`` on a shared directory, or any object with ``consume(id) -> bool``)."""
    path = getattr(persistence, "db_path", None)
    if path is None:
        raise TypeError(
            f"no default approval ledger for {type(persistence).__name__}: pass ledger= "
            "(humanwire.crewai.FileLedger(directory), shared by every resuming process)"
        )
    return SQLiteLedger(path)


def _pending_interaction(
    persistence: FlowPersistence, flow_id: str
) -> tuple[PendingFeedbackContext, str] | None:
    loaded = persistence.load_pending_feedback(flow_id)
    if loaded is None:
        return None
    context = loaded[1]
    interaction_id = (context.metadata or {}).get(INTERACTION_KEY)
    if not isinstance(interaction_id, str) or not interaction_id:
        return None  # paused by another provider: not ours to answer
    return context, interaction_id


def _answer_from_event(kind: str, event: Event) -> ApprovalDecision | str | None:
    if kind == "approval" and isinstance(event, ApprovalDecidedEvent):
        return decision_from_approval(event.payload)
    if kind == "approval" and isinstance(event, FormReceivedEvent):  # an older pause
        return decision_from_values(
            event.payload.values, interaction_id=event.payload.interaction_id
        )
    if kind == "question" and isinstance(event, MessageReceivedEvent):
        return event.payload.body
    return None


def _answer_from_status(kind: str, status: InteractionStatus) -> str | None:
    if isinstance(status.result, MessageReceivedEvent):
        return status.result.payload.body
    return "" if status.ended else None  # an unanswered question: no feedback


def _consumed_on_service(client: HumanWire, decision: ApprovalDecision) -> bool:
    """Consume an approved decision on the service (the digest its record holds: the
    review the paused flow asked about); false when it was used already."""
    if not decision.approved or not decision.interaction_id:
        return True
    try:
        client.approvals.consume(decision.interaction_id, action_digest=decision.action_digest)
    except (AlreadyConsumedError, NotApprovedError):
        return False
    return True


def _resume(
    flow_class: type[Flow[Any]],
    flow_id: str,
    persistence: FlowPersistence,
    ledger: ApprovalLedger,
    interaction_id: str,
    answer: ApprovalDecision | str,
    client: HumanWire | None,
    flow_kwargs: dict[str, Any],
) -> ResumedFlow | None:
    # Consume the approval before anything runs: of two deliveries, one resumes. On the
    # service first (across every process and ledger), then in the ledger.
    if isinstance(answer, ApprovalDecision):
        from humanwire._client import HumanWire

        if not _consumed_on_service(client if client is not None else HumanWire(), answer):
            return None
        feedback = feedback_text(answer)
    else:
        feedback = answer
    if not ledger.consume(interaction_id):
        return None
    try:
        flow = cast("Flow[Any]", flow_class.from_pending(flow_id, persistence, **flow_kwargs))
    except ValueError:
        return None  # resumed already, by other means
    result = flow.resume(feedback)
    return ResumedFlow(flow_id, flow, result)


def resume_from_webhook(
    body: bytes | str | Mapping[str, Any] | Event,
    headers: Mapping[str, str] | None,
    flow_class: type[Flow[Any]],
    persistence: FlowPersistence,
    *,
    secret: str | None = None,
    ledger: ApprovalLedger | None = None,
    client: HumanWire | None = None,
    **flow_kwargs: Any,
) -> ResumedFlow | None:
    """Resume the flow a delivery answers (``approval.decided``, ``message.received``),
    in this process, whichever process paused it; an approval is consumed on the service
    first (``client``, else one from the environment).

    ``body`` is the raw delivery (verified against ``secret`` when given) or its event;
    ``flow_class`` is the paused flow's class and ``persistence`` where it was saved (the
    same ``SQLiteFlowPersistence(path)``); ``flow_kwargs`` go to its constructor.
    Returns ``None`` for any other event, a send that is not a paused CrewAI flow's, an
    answer to an earlier feedback point than the one the flow waits at, or an approval
    consumed already (a repeated or concurrent delivery). Blocking, like
    ``Flow.resume``: from an async receiver, call it through ``asyncio.to_thread``.
    """
    event = parse_delivery(body, headers, secret=secret)
    if not isinstance(event, (ApprovalDecidedEvent, FormReceivedEvent, MessageReceivedEvent)):
        return None
    metadata = event.payload.metadata or {}
    flow_id = metadata.get(FLOW_KEY)
    if metadata.get(RESUME_KEY) != RESUME_CREWAI or not flow_id:
        return None  # another framework's pause, or not a pause at all
    pending = _pending_interaction(persistence, flow_id)
    if pending is None or pending[1] != event.payload.interaction_id:
        return None
    context, interaction_id = pending
    answer = _answer_from_event(str(context.metadata.get(KIND_KEY, "approval")), event)
    if answer is None:
        return None
    chosen = ledger if ledger is not None else default_ledger(persistence)
    return _resume(
        flow_class, flow_id, persistence, chosen, interaction_id, answer, client, flow_kwargs
    )


def resume_flow(
    flow_class: type[Flow[Any]],
    flow_id: str,
    persistence: FlowPersistence,
    *,
    client: HumanWire | None = None,
    timeout: float | None = 0,
    ledger: ApprovalLedger | None = None,
    **flow_kwargs: Any,
) -> ResumedFlow | None:
    """Resume a paused flow from its interaction's status, without a webhook: once it
    is answered, or its window closed unanswered (then an approval resumes with the
    timeout default, ``"reject: no approval decision arrived in time (timeout)"`` unless
    the approver said otherwise, and a question with no feedback). ``timeout`` waits for
    that on the service (``0``: look once; ``None``: until it ends). ``None`` while it is
    still open, when no such flow waits, or when its approval was consumed already. Run it
    from a scheduler for the flows whose forms expire (an expiry sends no webhook)."""
    pending = _pending_interaction(persistence, flow_id)
    if pending is None:
        return None
    context, interaction_id = pending
    from humanwire._client import HumanWire

    reader = client if client is not None else HumanWire()
    kind = str(context.metadata.get(KIND_KEY, "approval"))
    answer: ApprovalDecision | str | None
    if kind == "approval":
        approvals = reader.approvals
        record = (
            approvals.get(interaction_id)
            if timeout == 0
            else approvals.wait(interaction_id, timeout=timeout)
        )
        answer = decision_from_approval(record)
    else:
        status = (
            reader.interactions.status(interaction_id)
            if timeout == 0
            else reader.interactions.wait(interaction_id, timeout=timeout)
        )
        answer = _answer_from_status(kind, status)
    if answer is None:
        return None
    chosen = ledger if ledger is not None else default_ledger(persistence)
    return _resume(
        flow_class, flow_id, persistence, chosen, interaction_id, answer, reader, flow_kwargs
    )
