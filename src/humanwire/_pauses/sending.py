"""Sending a paused call's approval request or question without waiting for the answer
(:func:`send_approval_form`, :func:`send_pending_approval`, :func:`send_question`), open
for :func:`pause_window`; who is asked (:func:`approver_source`, :class:`LazyApprover`,
:class:`AskingPeople`) and on which client (:func:`service_client`); a driver's or a
gate's own sends, its approver, window and clients given once (:class:`Asks`:
:func:`request_approval`, :func:`ask_question`, and :func:`ask_person`, which reads the
answer too)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from humanwire._tool_clients import ToolClients
from humanwire.approval import ApprovalRequest, Approver
from humanwire.errors import HumanWireError
from humanwire.types import MessageResponse

from .keys import DEFAULT_PAUSE_WINDOW

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire
    from humanwire.types.approvals import Approval

    from .answers import Answer, AnswerKind


def pause_window(approver: Approver, window: float | None = None) -> float:
    """Seconds a paused call's approval or question stays open: ``window``, else the
    approver's ``follow_up_time``, else :data:`DEFAULT_PAUSE_WINDOW`."""
    return float(window or approver.follow_up_time or DEFAULT_PAUSE_WINDOW)


async def send_approval_form(
    approver: Approver,
    request: ApprovalRequest,
    *,
    idempotency_key: str,
    metadata: Mapping[str, str],
    window: float | None = None,
    allow_edit: bool | None = None,
    client: AsyncHumanWire | None = None,
) -> Approval:
    """Send ``request``'s approval request (``POST /approvals``; the name is older than
    it) without holding the request (the answer comes by the long-poll or the
    ``approval.decided`` webhook), open for :func:`pause_window`, on ``client`` (else the
    approver's). The same ``idempotency_key`` gets the same request back. ``allow_edit``
    is refused: an approval is about the action as asked."""
    if allow_edit:
        raise ValueError("an approval request offers no edit: it is about the action as asked")
    kwargs = approver.approval_kwargs(
        request,
        wait=False,
        window=pause_window(approver, window),
        idempotency_key=idempotency_key,
        metadata=metadata,
    )
    sender = client if client is not None else approver.async_client
    return await sender.approvals.create(**kwargs)


async def send_question(
    approver: Approver,
    question: str,
    *,
    idempotency_key: str,
    metadata: Mapping[str, str],
    window: float | None = None,
    client: AsyncHumanWire | None = None,
) -> MessageResponse:
    """Send ``question`` to the approver's person on its channel without holding the
    request, open for :func:`pause_window`; the reply comes by the status or the webhook."""
    sender = client if client is not None else approver.async_client
    send = getattr(sender.messages, approver.channel)
    response = await send(
        to=approver.to,
        message=question,
        follow_up_time=pause_window(approver, window),
        metadata=dict(metadata),
        idempotency_key=idempotency_key,
    )
    return cast(MessageResponse, response)


@dataclass(frozen=True)
class PendingApproval:
    """A tool call waiting for a person's approval: what it is and where its approval
    page is (``form_url``, the name it had when approvals were forms)."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    interaction_id: str
    form_url: str | None = None
    default_on_timeout: Literal["approve", "reject"] = "reject"

    @property
    def request(self) -> ApprovalRequest:
        """The call as an approval request: what its approval is bound to."""
        return ApprovalRequest(self.tool_name, self.arguments)

    @property
    def kind(self) -> AnswerKind:
        """What it waits for (an :class:`~humanwire._pauses.answers.Awaited`): an approval."""
        return "approval"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingApproval:
        return cls(**dict(data))


async def send_pending_approval(
    approver: Approver,
    *,
    call_id: str,
    tool_name: str,
    arguments: dict[str, Any],
    idempotency_key: str,
    metadata: Mapping[str, str],
    description: str | None = None,
    client: AsyncHumanWire | None = None,
) -> PendingApproval:
    """Send one paused call's approval request (:func:`send_approval_form`), for a
    framework that runs a paused call with its own arguments or not at all; returns its
    :class:`PendingApproval`."""
    response = await send_approval_form(
        approver,
        ApprovalRequest(tool_name, arguments, description),
        idempotency_key=idempotency_key,
        metadata=metadata,
        client=client,
    )
    return PendingApproval(
        call_id=call_id,
        tool_name=tool_name,
        arguments=arguments,
        interaction_id=response.interaction_id,
        form_url=response.approval_url,
        default_on_timeout=approver.default_on_timeout,
    )


def approver_source(approver: Approver | None = None, **options: Any) -> Callable[[], Approver]:
    """Who is asked: ``approver``, else one built from ``options`` (``Approver``'s keyword
    arguments; none: from the environment) on first use, so a gate made at import time
    resolves nothing yet. Both is a ``TypeError``."""
    if approver is not None and options:
        raise TypeError("give either approver= or approver options, not both")
    holder: list[Approver] = [approver] if approver is not None else []

    def get() -> Approver:
        if not holder:
            holder.append(Approver(**options))
        return holder[0]

    return get


class LazyApprover:
    """``approver``, resolved on first use: a gate keeps ``_approver``, an
    :func:`approver_source`, so a gate made at import time resolves nothing yet."""

    _approver: Callable[[], Approver]

    @property
    def approver(self) -> Approver:
        return self._approver()


class AskingPeople:
    """Whom a driver that asks and waits in the run asks, on which clients, and for how
    long: ``approver`` (or its options, built at once), its :class:`ToolClients`, and
    ``window`` (:func:`pause_window`). The base of the adapters' run drivers."""

    def __init__(
        self, approver: Approver | None = None, *, window: float | None = None, **options: Any
    ) -> None:
        self.approver = approver_source(approver, **options)()
        self.clients = ToolClients.of(self.approver)
        self.window = pause_window(self.approver, window)


class Asks(Protocol):
    """A driver or a gate that asks people: whom (``approver``), for how long a paused
    call stays open (``window``), on which clients (``clients``). :class:`AskingPeople`
    is one."""

    @property
    def approver(self) -> Approver: ...

    @property
    def window(self) -> float: ...

    @property
    def clients(self) -> ToolClients: ...


async def request_approval(
    asker: Asks,
    request: ApprovalRequest,
    *,
    key: str,
    metadata: Mapping[str, str],
    client: AsyncHumanWire | None = None,
) -> Approval:
    """:func:`send_approval_form` from ``asker``: its approver, open its ``window``, on
    ``client`` (else the client of this event loop)."""
    return await send_approval_form(
        asker.approver,
        request,
        idempotency_key=key,
        metadata=metadata,
        window=asker.window,
        client=client if client is not None else await asker.clients.get(),
    )


async def ask_question(
    asker: Asks,
    text: str,
    *,
    key: str,
    metadata: Mapping[str, str],
    window: float | None = None,
    client: AsyncHumanWire | None = None,
) -> MessageResponse:
    """:func:`send_question` from ``asker``: to its approver's person, open ``window``
    (else its ``window``), on ``client`` (else the client of this event loop)."""
    return await send_question(
        asker.approver,
        text,
        idempotency_key=key,
        metadata=metadata,
        window=window if window is not None else asker.window,
        client=client if client is not None else await asker.clients.get(),
    )


async def ask_person(
    asker: Asks,
    kind: AnswerKind,
    subject: ApprovalRequest | str,
    *,
    key: str,
    metadata: Mapping[str, str],
    timeout: float | None,
    window: float | None = None,
    client: AsyncHumanWire | None = None,
) -> Answer | HumanWireError | None:
    """Send ``subject`` (an approval's request, a question's text) from ``asker`` under
    ``key`` (again: the same interaction back) and read its answer (waiting at most
    ``timeout`` seconds; ``0``: look once; ``None``: until it ends): a decision, a reply
    (``Human response: ...``, or the no-response text), the service's error that kept it
    from being sent or read (returned, so the caller fails closed its own way), or
    ``None`` while it is open."""
    from .answers import read_answer

    service = client if client is not None else await asker.clients.get()
    try:
        if kind == "approval":
            if not isinstance(subject, ApprovalRequest):
                raise TypeError("an approval is asked about an ApprovalRequest")
            sent: Approval | MessageResponse = await request_approval(
                asker, subject, key=key, metadata=metadata, client=service
            )
        else:
            sent = await ask_question(
                asker, str(subject), key=key, metadata=metadata, window=window, client=service
            )
        answer = await read_answer(service, kind, sent.interaction_id, timeout=timeout)
    except HumanWireError as exc:
        return exc
    return answer


def service_client(approver: Approver | None, client: AsyncHumanWire | None) -> AsyncHumanWire:
    """``client``, else the approver's, else one from the environment."""
    if client is not None:
        return client
    if approver is not None:
        return approver.async_client
    from humanwire._client import AsyncHumanWire

    return AsyncHumanWire()
