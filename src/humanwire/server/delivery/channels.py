"""A chat channel as a registration: what the rest of the service needs to know of a
channel that a provider package brings (Telegram; Discord and Teams next).

A channel package under ``delivery/`` describes itself with one ``ChatChannel`` (its
``channel.py``, light: no SDK imported) and is listed once in ``delivery/chat.py``.
From that entry, and nothing else:

- the API gets ``POST /messages/<name>`` and ``POST /forms/<name>`` (``routes/messages.py``
  and ``routes/forms.py`` read ``message_request`` and ``form_request``);
- the engine sends it like any message (the shared sender of the channel's provider, or
  a ``from`` the provider accepts) and matches what comes back: a text in the thread of
  a message (``InboundText.thread``) answers that message; one outside any thread, with
  ``by_pair``, the latest open message sent to the person from that sender, with the
  rules of a shared number when several accounts wait there (the shared sender's codes,
  ``engine/sends.py``);
- the sandbox carries it when no provider is configured (``sandbox_sender``), and the
  sandbox API and the inbox answer on it;
- the start-up lines say whether the configuration has it (``configured``,
  ``describe``); its provider is built by its builder in ``real.CHANNEL_PROVIDERS``, the
  one place that imports the provider (and its SDK and HTTP routes): the engine reads
  this registration, so it must reach no HTTP framework.

Nothing here imports the configuration (``config`` is the vocabulary below every layer:
it must not import back), so a channel reads its section as ``config.<name>``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from humanwire.types.approvals import DecisionVia

__all__ = ["ChatChannel", "ChatForm", "ChatMessage"]


class ChatMessage(Protocol):
    """A chat channel's message request (its wire model), as the engine reads it."""

    to: str | None
    person: str | None
    """In place of ``to`` (exactly one is set): a person of the people directory."""
    message: str
    wait_time: float | None
    follow_up_time: float | None

    def to_wire(self) -> dict[str, Any]: ...


class ChatForm(Protocol):
    """A chat channel's form request (a ``Form`` with the channel's ``to``), as the
    engine reads it."""

    to: str | None
    person: str | None
    title: str
    message: str | None
    wait_time: float | None

    @property
    def effective_follow_up_time(self) -> float: ...
    def to_wire(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ChatChannel:
    """One chat channel (the module says what reads each field)."""

    name: str
    """The wire's channel (``telegram``): ``/messages/<name>``, ``/providers/<name>/``,
    ``medium`` of its ``message.received``. A value of ``DeliveryChannel``."""
    title: str
    """How pages and the start-up lines name it (``Telegram``)."""
    message_request: type[Any]
    """The body of ``POST /messages/<name>`` (a wire model read as a ``ChatMessage``)."""
    operation_id: str
    """The OpenAPI operation id of that route (``sendTelegram``)."""
    form_request: type[Any]
    """The body of ``POST /forms/<name>`` (a ``Form`` with the channel's ``to``): the
    form page's link goes out on the channel."""
    form_operation_id: str
    summary: str
    description: str
    sandbox_sender: str
    """The shared sender the sandbox uses on this channel (the fictional bot)."""
    configured: Callable[[Any], bool]
    """Whether a ``ServiceConfig`` carries the channel through its real provider (built
    by the channel's entry in ``real.CHANNEL_PROVIDERS``)."""
    describe: Callable[[Any], str]
    """The start-up line's details of the configured provider (never a secret)."""
    button_via: DecisionVia | None = None
    """Approvers on this channel decide by its buttons (``hw:<id>:<choice>``), recorded
    with this ``via``; None: the channel takes no approvers."""
    by_pair: bool = True
    """A text outside any thread answers the latest open message to its sender from the
    sender it went to (SMS's number pair): "the next message in the chat"."""
