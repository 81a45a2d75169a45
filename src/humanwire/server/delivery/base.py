"""Channel providers: how a text, a form link or a call reaches a recipient.

The engine renders everything (templates applied) and hands the provider one
``Outbound`` item; the built-in sandbox provider delivers into the inbox. A provider for
real phones or workspaces implements the same protocol and reports inbound messages and
call ends back through the engine's ``sandbox_*`` entry points (or their future
provider-neutral twins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["Outbound", "Provider"]


@dataclass(frozen=True)
class Outbound:
    """One thing to deliver, exactly as the recipient should see it."""

    account_id: str
    interaction_id: str | None
    channel: Literal["sms", "whatsapp", "slack", "call"]
    kind: Literal["message", "form", "call"]
    from_addr: str | None
    to_addr: str
    text: str
    """The text (templates applied); for a call, the prompt the voice agent speaks from."""
    form_url: str | None = None


class Provider(Protocol):
    async def deliver(self, item: Outbound) -> str:
        """Delivers ``item`` and returns the delivery id."""
        ...
