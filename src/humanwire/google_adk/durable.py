"""Durable approval: a run paused at its approvals waits in ADK's session service, and the
``form.received`` webhook resumes it, in this process or another.

ADK keeps the pause itself: the session (``SqliteSessionService``,
``DatabaseSessionService``, Vertex AI's) holds the gates' ``adk_request_confirmation``
calls and their approvals, so nothing else is saved, and the process may exit.

1. Run as usual (``runner.run_async``), or with :func:`run_until_approval`, which also
   returns the approvals the run paused at (their forms are already out: the gates sent
   them).
2. The webhook receiver calls :func:`resume_from_webhook` with the delivery: the form's
   metadata names the app, user, session and call; once every approval the session is
   paused at is decided (the others are read from the service), each is consumed in the
   approval ledger (:class:`~humanwire._pauses.ApprovalLedger`) and the host answers every
   ``adk_request_confirmation`` in one message; ADK calls each gate again, which reads its
   decision from the service and runs the tool or answers why not. The run goes on until
   it finishes or pauses at its next approvals.
3. A form that expires sends no webhook: :func:`resume_expired` (from a scheduler)
   resumes sessions whose approvals have all closed, expired ones with the timeout default.

Each approval is used once: before a resume answers anything it consumes every approval
of the pause by interaction id, and a resume that finds one consumed does nothing. A retried
or duplicated webhook, two receivers racing, or ``resume_expired`` racing the webhook
therefore never runs an approved call twice. (ADK itself also skips a confirmation
answered twice in a row.)

A receiver, in any web framework::

    ledger = FileApprovalLedger("approvals-used")

    async def on_webhook(raw_body: bytes, headers: Mapping[str, str]) -> None:
        outcome = await resume_from_webhook(runner, ledger, raw_body, headers, secret=SECRET)
        # None: not one of ours, the session still waits for another, or done already

The resuming process builds the same agent (same tools, same gates) on a ``Runner`` with
the same app name and session service as the one that paused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.adk.runners import Runner
from google.genai import types

from humanwire._pauses import (
    Answer,
    ApprovalLedger,
    Delivery,
    FileApprovalLedger,
    PausedOutcome,
    PauseResumer,
    consume_all,
    decision_from_value,
    service_client,
)
from humanwire._pauses import resume as shared
from humanwire.approval import ApprovalDecision
from humanwire.types import Event as WebhookEvent

from .approval import (
    APP_KEY,
    CALL_KEY,
    RESUME_GOOGLE_ADK,
    SESSION_KEY,
    USER_KEY,
    PausedApproval,
    confirmation_response,
    paused_approvals,
)

if TYPE_CHECKING:
    from google.adk.events import Event
    from google.adk.sessions import Session

    from humanwire._client import AsyncHumanWire

__all__ = [
    "ClaimStore",
    "DurableOutcome",
    "FileClaimStore",
    "resume_expired",
    "resume_from_webhook",
    "resume_session",
    "run_until_approval",
]


ClaimStore = ApprovalLedger
FileClaimStore = FileApprovalLedger
"""This adapter's names for the approval ledger every adapter shares (``consume`` an
interaction id: true the first time, in any process)."""


@dataclass(frozen=True)
class DurableOutcome(PausedOutcome["tuple[Event, ...]", "tuple[PausedApproval, ...]"]):
    """How a durable drive ended: ``paused`` at approvals (the session holds the pause;
    the process may exit), or finished. ``result`` (also ``events``) are the events this
    drive produced."""

    result: tuple[Event, ...] = ()
    paused: tuple[PausedApproval, ...] = ()
    user_id: str = field(default="", kw_only=True)
    session_id: str = field(default="", kw_only=True)

    @property
    def events(self) -> tuple[Event, ...]:
        return self.result

    @property
    def final_output(self) -> str | None:
        """The text of the last final response, if the drive produced one."""
        for event in reversed(self.events):
            if event.is_final_response() and event.content and event.content.parts:
                text = "".join(part.text or "" for part in event.content.parts)
                if text:
                    return text
        return None


async def _session(runner: Runner, user_id: str, session_id: str) -> Session | None:
    return await runner.session_service.get_session(
        app_name=runner.app_name, user_id=user_id, session_id=session_id
    )


async def _drive(
    runner: Runner,
    user_id: str,
    session_id: str,
    message: types.Content,
    run_kwargs: Mapping[str, Any],
) -> DurableOutcome:
    """Run until the run finishes or pauses; report the approvals it paused at."""
    events = [
        event
        async for event in runner.run_async(
            user_id=user_id, session_id=session_id, new_message=message, **run_kwargs
        )
    ]
    session = await _session(runner, user_id, session_id)
    paused = paused_approvals(session) if session is not None else []
    return DurableOutcome(tuple(events), tuple(paused), user_id=user_id, session_id=session_id)


async def run_until_approval(
    runner: Runner,
    *,
    user_id: str,
    session_id: str,
    new_message: types.Content,
    **run_kwargs: Any,
) -> DurableOutcome:
    """``runner.run_async`` until the run finishes or pauses at approvals (their forms
    were sent by the gates); returns the events and the pause. ``run_kwargs`` go to
    ``run_async`` (``run_config``, ``state_delta``...)."""
    return await _drive(runner, user_id, session_id, new_message, run_kwargs)


def _resumer(
    runner: Runner,
    ledger: ApprovalLedger,
    client: AsyncHumanWire | None,
    run_kwargs: Mapping[str, Any],
    *,
    user_id: str | None = None,
) -> PauseResumer[Session, DurableOutcome]:
    """This adapter's part of the shared resume (:mod:`humanwire._pauses.resume`): the
    pause is the session (found by the app, user and session a form carries), waiting on
    the approvals it is paused at, resumed by answering every ``adk_request_confirmation``
    in one message once each approval is consumed. ``user_id`` narrows the listing."""

    async def find(delivery: Delivery) -> Session | None:
        metadata = delivery.metadata
        if metadata.get(APP_KEY) != runner.app_name:
            return None
        user, session_id = metadata.get(USER_KEY, ""), metadata.get(SESSION_KEY, "")
        return await _session(runner, user, session_id) if user and session_id else None

    async def waiting() -> AsyncIterator[Session]:
        listed = await runner.session_service.list_sessions(
            app_name=runner.app_name, user_id=user_id
        )
        for listed_session in listed.sessions:
            session = await _session(runner, listed_session.user_id, listed_session.id)
            if session is not None:
                yield session

    async def resume(session: Session, decisions: dict[str, Answer]) -> DurableOutcome | None:
        paused = paused_approvals(session)
        if not paused:
            return None
        # Used once: consume every approval before anything is answered.
        if not await consume_all(ledger, [approval.interaction_id for approval in paused]):
            return None
        message = types.Content(
            role="user",
            parts=[
                confirmation_response(approval, _decision(decisions[approval.call_id]))
                for approval in paused
            ],
        )
        return await _drive(runner, session.user_id, session.id, message, run_kwargs)

    async def reader() -> AsyncHumanWire:
        return service_client(None, client)

    return PauseResumer(
        framework=RESUME_GOOGLE_ADK,
        find=find,
        pending=lambda session: {a.call_id: a for a in paused_approvals(session)},
        resume=resume,
        client=reader,
        waiting=waiting,
        call_key=CALL_KEY,
    )


def _decision(answer: Answer) -> ApprovalDecision:
    # Approvals only: an answer that is not a decision (none should be) is read as one.
    return answer if isinstance(answer, ApprovalDecision) else decision_from_value(answer)


async def resume_session(
    runner: Runner,
    ledger: ApprovalLedger,
    *,
    user_id: str,
    session_id: str,
    client: AsyncHumanWire | None = None,
    **run_kwargs: Any,
) -> DurableOutcome | None:
    """Resume the session once every approval it is paused at is decided on the service
    (``client``, else one from the environment, reads them).

    ``None`` when there is nothing to do: no such session, no humanwire pause, an
    approval still open, or one already used (another resume ran, or runs, it).
    Otherwise the run goes on until it finishes or pauses again.
    """
    session = await _session(runner, user_id, session_id)
    if session is None:
        return None
    return await shared.resume_answered(_resumer(runner, ledger, client, run_kwargs), session)


async def resume_from_webhook(
    runner: Runner,
    ledger: ApprovalLedger,
    body: bytes | str | Mapping[str, Any] | WebhookEvent,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
    client: AsyncHumanWire | None = None,
    **run_kwargs: Any,
) -> DurableOutcome | None:
    """Resume the session an ``approval.decided`` delivery decides (its metadata names it).

    With ``secret`` the ``Humanwire-Signature`` header is verified against the raw body
    first (``WebhookVerificationError`` otherwise). ``None`` for any other event, another
    framework's or another app's form, a session the runner's service does not hold, a
    form the session is no longer paused at, while another approval of the pause is
    still open, and for a delivery already acted on. ``client`` (else one from the
    environment) reads the other approvals' decisions.
    """
    resumer = _resumer(runner, ledger, client, run_kwargs)
    return await shared.resume_from_webhook(resumer, body, headers, secret=secret)


async def resume_expired(
    runner: Runner,
    ledger: ApprovalLedger,
    *,
    user_id: str | None = None,
    client: AsyncHumanWire | None = None,
    **run_kwargs: Any,
) -> list[DurableOutcome]:
    """Resume every session of the runner's app (of ``user_id`` only, when given) whose
    approvals have all closed: submitted (a webhook that was missed) or expired
    unanswered (the timeout default each form was sent with). It reads every session of
    the app: run it from a scheduler, not per request."""
    resumer = _resumer(runner, ledger, client, run_kwargs, user_id=user_id)
    return await shared.resume_expired(resumer)
