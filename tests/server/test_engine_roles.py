"""The engine's roles: objects of their own on one runtime, reached by name, not parts
mixed into ``Engine`` (docs/explanation/architecture.md, "Roles")."""

from __future__ import annotations

import pytest
from engine_support import account, engine

from humanwire.server.engine import Account, Engine
from humanwire.server.engine.accounts import Accounts
from humanwire.server.engine.channels import ChannelCards
from humanwire.server.engine.events import OutcomeEvents
from humanwire.server.engine.idempotency import Idempotency
from humanwire.server.engine.numbers import Numbers
from humanwire.server.engine.sessions import InboxSessions
from humanwire.server.engine.state import EngineState
from humanwire.server.engine.webhooks import Webhooks
from humanwire.server.errors import AccountSuspended

__all__ = ["account", "engine"]

ROLES = {
    "accounts": Accounts,
    "sessions": InboxSessions,
    "idempotency": Idempotency,
    "numbers": Numbers,
    "webhooks": Webhooks,
    "channel_cards": ChannelCards,
    "events": OutcomeEvents,
}


def test_no_role_is_mixed_into_the_engine() -> None:
    for role in ROLES.values():
        assert not issubclass(Engine, role), role
        assert not issubclass(role, EngineState), role  # nor built on the engine's parts


async def test_each_role_is_an_attribute_on_the_one_runtime(engine: Engine) -> None:
    for name, role in ROLES.items():
        found = getattr(engine, name)
        assert isinstance(found, role), name
        assert found._runtime is engine.runtime, name
    # The parts still mixed in read the runtime's own objects, not copies.
    assert engine.store is engine.runtime.store
    assert engine.providers is engine.runtime.carriers.by_channel


async def test_a_suspension_the_spam_guard_made_holds_for_the_parts_still_mixed_in(
    engine: Engine, account: Account
) -> None:
    """One suspension hint, the accounts role's: what ``check_send`` learnt, the
    delegation the sends still call sees."""
    for n in range(engine.config.spam_recipients + 1):
        try:
            await engine.accounts.check_send(account, "buy now", f"+1202555{n:04d}")
        except AccountSuspended:
            break
    else:
        pytest.fail("the spam guard never suspended the account")
    with pytest.raises(AccountSuspended):
        await engine._require_active(account)  # the account as read before the suspension
