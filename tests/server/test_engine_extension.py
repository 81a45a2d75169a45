"""The engine is extended by registration, not by overriding: no part of ``Engine`` defines
a method another part defines too (a constructor aside), no ``super()`` outside a
constructor, and approvals plug in through the registries a reader of ``human.py``,
``deadlines.py`` and ``holding.py`` sees."""

from __future__ import annotations

import ast
import inspect
from collections import defaultdict
from pathlib import Path

from humanwire.server.config import ServiceConfig
from humanwire.server.engine import Engine
from humanwire.server.engine.approval_access import ApprovalAccess

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
    # the people directory's confirmation codes (a code is no decision), then approvals'.
    assert engine.inbound.matchers == [engine.people._match_code, approvals._match_approval]
    assert engine.inbound.takers == {"approval": approvals._take_decision}
    assert engine.inbound.waiting == [approvals._approvals_waiting]
    assert engine.inbound.call_ended == [approvals._call_decided]
    assert engine.deadlines.closers == {"approval": approvals._time_out}
    assert engine.holding.accepted_bodies == {"approval": approvals._accepted_approval}
    assert engine.schedule.handlers["approval.remind"] == approvals._remind_step
    assert engine.schedule.handlers["approval.escalate"] == approvals._escalate_step
