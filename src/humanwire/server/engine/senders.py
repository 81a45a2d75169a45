"""The senders role (``engine.senders``): the number, account or workspace a send goes
out from: the account's reserved number, a shared sender (its provider's), or a ``from``
the provider accepts for the account."""

from __future__ import annotations

from ..errors import InvalidRequest
from ._common import Account, Channel
from .runtime import Runtime


class Senders:
    """Whom a send goes out from (see the module docstring)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._providers = runtime.carriers.by_channel

    def shared(self, channel: Channel) -> str:
        """The shared number (or workspace) ``channel`` goes out from: its provider's."""
        return self._providers[channel].senders[channel]

    async def reserved_number(self, account: Account) -> str | None:
        numbers = await self._store.numbers_of(account.id)
        return numbers[0].phone_number if numbers else None

    async def phone(self, account: Account, requested: str | None) -> str:
        """The number a text or call goes out from. A requested ``from`` must be the
        account's reserved number or a shared number (400 ``from`` otherwise): with two
        carriers, either one's (it goes out through its owner)."""
        reserved = await self.reserved_number(account)
        shared = self.shared("sms")
        if requested is None:
            return reserved or shared
        if requested in (reserved, shared) or await self._providers["sms"].accepts_sender(
            account.id, "sms", requested
        ):
            return requested
        raise InvalidRequest(
            "from must be the account's reserved number (GET /numbers); "
            "reserve one with POST /numbers/reserve",
            field="from",
        )

    async def slack(self, account: Account, requested: str | None) -> str:
        """The workspace a Slack send goes out from: the shared one, or a requested
        ``from`` the provider accepts for the account (a workspace it installed the bot
        in); 400 ``from`` otherwise."""
        shared = self.shared("slack")
        if requested is None or requested == shared:
            return shared
        if not await self._providers["slack"].accepts_sender(account.id, "slack", requested):
            raise InvalidRequest(
                "from must be the shared workspace or a workspace this account installed "
                "the bot in (the inbox's Slack page)",
                field="from",
            )
        return requested
