"""The engine is extended by registration, not by overriding: no part of ``Engine`` defines
a method another part defines too (a constructor aside), no ``super()`` outside a
constructor, and approvals plug in through the registries a reader of ``human.py``,
``deadlines.py`` and ``holding.py`` sees."""

from __future__ import annotations

import ast
import inspect
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from humanwire.server.approvals import texts
from humanwire.server.config import ServiceConfig
from humanwire.server.engine import Engine
from humanwire.server.engine.approval_access import ApprovalAccess
from humanwire.server.engine.approval_records import REPLY_CHANNELS
from humanwire.server.engine.human import InboundText, TextMatcher, WaitingSource
from humanwire.server.store.records import InteractionRecord

ENGINE_DIR = Path(inspect.getfile(Engine)).parent


def test_no_part_of_the_engine_overrides_another_parts_method() -> None:
    defined: dict[str, list[str]] = defaultdict(list)
    for part in Engine.__mro__:
        if not part.__module__.startswith("humanwire."):
            continue
        for name, value in vars(part).items():
            if name == "__init__" or (not callable(value) and not isinstance(value, property)):
                continue
            if name.startswith("__") and name.endswith("__"):
                continue
            defined[name].append(part.__qualname__)
    overridden = {name: parts for name, parts in defined.items() if len(parts) > 1}
    assert overridden == {}


def test_super_is_called_only_in_constructors() -> None:
    found = []
    for path in sorted(ENGINE_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if function.name == "__init__":
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "super"
                ):
                    found.append(f"{path.name}:{node.lineno} in {function.name}")
    assert found == []


def test_approvals_are_a_role_registered_where_the_engine_reads(tmp_path: Path) -> None:
    engine = Engine(ServiceConfig(db_path=str(tmp_path / "hw.db")))
    approvals = engine.approvals
    assert isinstance(approvals, ApprovalAccess)
    assert not any(issubclass(part, ApprovalAccess) for part in Engine.__mro__)
    assert approvals.host is engine
    # In the order matching runs: the message matcher first (``HumanSide._match``), then
    # the people directory's confirmation codes (a code is no decision), then the
    # fallback's onward messages (a reply there answers the first ask), then approvals'.
    # Each says what it can claim: a plain reply to a message enters neither's code.
    assert engine.inbound.matchers == [
        TextMatcher(engine.people._match_code, unmatched=False, matched_key="_confirm"),
        TextMatcher(engine.fallbacks._to_first, unmatched=False, matched_key="_fallbackOf"),
        TextMatcher(approvals._match_approval, channels=REPLY_CHANNELS, matched_body=texts.CODE),
    ]
    assert engine.inbound.takers == {"approval": approvals._take_decision}
    assert engine.inbound.waiting == [
        WaitingSource(
            engine.store.open_approvers_at, approvals._approvals_waiting, channels=REPLY_CHANNELS
        )
    ]
    assert engine.inbound.call_ended == [approvals._call_decided]
    assert engine.deadlines.closers == {
        "approval": approvals._time_out,
        "message": engine.fallbacks._close,  # the fallback's onward messages end quietly
        "form": engine.fallbacks._close,  # and its onward forms
    }
    # An onward form's own token is the first one's form (``fallbackAfter`` on forms).
    assert engine.links.form_owners == [engine.fallbacks._form_owner]
    assert engine.holding.accepted_bodies == {"approval": approvals._accepted_approval}
    assert engine.schedule.handlers["approval.remind"] == approvals._remind_step
    assert engine.schedule.handlers["approval.escalate"] == approvals._escalate_step


def test_a_plain_reply_to_a_message_is_offered_to_no_registered_matcher(tmp_path: Path) -> None:
    engine = Engine(ServiceConfig(db_path=str(tmp_path / "hw.db")))
    people, fallback, approvals = engine.inbound.matchers
    # What the matchers' registrations read of a matched interaction: its request.
    message = cast(InteractionRecord, SimpleNamespace(request={"message": "Deploy?"}))
    confirming = cast(InteractionRecord, SimpleNamespace(request={"_confirm": {}}))
    onward = cast(InteractionRecord, SimpleNamespace(request={"_fallbackOf": "int_1"}))

    def text(body: str, channel: str = "sms") -> InboundText:
        return InboundText(channel=channel, from_addr="+12025550100", to_addr="+1415", body=body)

    assert not people.offered(text("Ship it"), message)
    assert not approvals.offered(text("Ship it"), message)
    assert not fallback.offered(text("Ship it"), message)
    assert fallback.offered(text("Ship it"), onward)
    assert not fallback.offered(text("Ship it"), None)
    assert people.offered(text("123456"), confirming)
    assert not people.offered(text("123456"), None)
    assert approvals.offered(text("yes 1234"), message)  # may name an approval's code
    assert approvals.offered(text("Ship it"), None)  # matched nothing: maybe a decision
    assert not approvals.offered(text("yes", channel="slack"), None)
