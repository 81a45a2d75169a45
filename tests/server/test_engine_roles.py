"""The engine's roles: objects of their own on one runtime, reached by name, not parts
mixed into ``Engine`` (docs/explanation/architecture.md, "Roles")."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest
from engine_support import account, engine

from humanwire.server.engine import Account, Engine
from humanwire.server.engine.accounts import Accounts, Idempotency, InboxSessions
from humanwire.server.engine.approval_access import ApprovalAccess
from humanwire.server.engine.calls import Calls
from humanwire.server.engine.channels import ChannelCards
from humanwire.server.engine.events import OutcomeEvents
from humanwire.server.engine.holding import Deadlines, Holding
from humanwire.server.engine.human import Inbound
from humanwire.server.engine.interactions import Delivery, Interactions
from humanwire.server.engine.links import LinkPages
from humanwire.server.engine.numbers import Numbers
from humanwire.server.engine.outcomes import RespondAsync
from humanwire.server.engine.replicas import ReplicaNotices
from humanwire.server.engine.sandbox import Sandbox
from humanwire.server.engine.sends import Senders, Sends
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
    "deadlines": Deadlines,
    "holding": Holding,
    "interactions": Interactions,
    "delivery": Delivery,
    "senders": Senders,
    "sends": Sends,
    "calls": Calls,
    "respond_async": RespondAsync,
    "inbound": Inbound,
    "links": LinkPages,
    "sandbox": Sandbox,
    "replica_notices": ReplicaNotices,
}


def test_the_engine_is_one_class_over_its_roles() -> None:
    ours = [part for part in Engine.__mro__ if part.__module__.startswith("humanwire.")]
    assert ours == [Engine]
    for role in [*ROLES.values(), ApprovalAccess]:
        assert not issubclass(Engine, role), role


def test_no_role_subclasses_another_role() -> None:
    """A role reaches another through a named attribute, never an inherited method."""
    for name, role in ROLES.items():
        ours = [part for part in role.__mro__[1:] if part.__module__.startswith("humanwire.")]
        assert ours == [], name


async def test_each_role_is_an_attribute_on_the_one_runtime(engine: Engine) -> None:
    for name, role in ROLES.items():
        found = getattr(engine, name)
        assert isinstance(found, role), name
        assert found._runtime is engine.runtime, name
    # What callers read of the runtime is the runtime's own, not copies.
    assert engine.store is engine.runtime.store
    assert engine.providers is engine.runtime.carriers.by_channel


def test_no_engine_module_reaches_a_role_through_self_of_another() -> None:
    """No ``self.<name>`` in a role's class names another role's method: each role
    uses its own attributes (``self._holding.answer``), by the role's name."""
    role_methods: dict[str, set[str]] = {}
    for name, role in ROLES.items():
        role_methods[name] = {m for m in vars(role) if not m.startswith("__")}
    for name, role in ROLES.items():
        source = textwrap.dedent(inspect.getsource(role))
        own = {m for part in role.__mro__ for m in vars(part)}
        own |= _assigned_attributes(source)
        used = {
            node.attr
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        }
        assert used <= own, (name, sorted(used - own))


def _assigned_attributes(source: str) -> set[str]:
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


async def test_a_suspension_the_spam_guard_made_holds_for_every_send(
    engine: Engine, account: Account
) -> None:
    """One suspension hint, the accounts role's: what ``check_send`` learnt, the account
    check the sends and approvals call sees."""
    for n in range(engine.config.spam_recipients + 1):
        try:
            await engine.accounts.check_send(account, "buy now", f"+1202555{n:04d}")
        except AccountSuspended:
            break
    else:
        pytest.fail("the spam guard never suspended the account")
    with pytest.raises(AccountSuspended):
        await engine.accounts.require_active(account)  # as read before the suspension
