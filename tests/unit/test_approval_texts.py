"""How an approver's text reply is read, and what the texts say (the service's
``approvals.texts``): strict, never a guess."""

from __future__ import annotations

import pytest

from humanwire.server.approvals.texts import (
    Reply,
    action_line,
    ask_text,
    clarify_text,
    parse_reply,
    reminder_text,
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("YES", Reply("approve", None, None)),
        ("  yes.  ", Reply("approve", None, None)),
        ("y", Reply("approve", None, None)),
        ("Approve", Reply("approve", None, None)),
        ("ok 4821", Reply("approve", "4821", None)),
        ("YES 4821", Reply("approve", "4821", None)),
        ("no, not this quarter", Reply("reject", None, "not this quarter")),
        ("NO 4821 not this quarter", Reply("reject", "4821", "not this quarter")),
        ("No: 4821 - too much", Reply("reject", "4821", "too much")),
        ("deny 12345", Reply("reject", None, "12345")),
        ("Rejected", Reply("reject", None, None)),
    ],
)
def test_replies_that_are_decisions(body: str, expected: Reply) -> None:
    assert parse_reply(body) == expected


@pytest.mark.parametrize(
    "body", ["", "   ", "sure", "yeah", "maybe yes", "nope", "4821 yes", "yesterday", "Nothing"]
)
def test_replies_that_are_not(body: str) -> None:
    assert parse_reply(body) is None


def test_the_texts() -> None:
    action = {"name": "wire_money", "arguments": {"amount": 4200, "to": "ACME Ltd"}}
    assert action_line(action) == 'wire_money(amount=4200, to="ACME Ltd")'
    assert action_line(None) is None
    long = action_line({"name": "x", "arguments": {"a": "y" * 500}})
    assert long is not None and len(long) == 160 and long.endswith("…")
    asked = ask_text("Wire", "Invoice 118", action, "https://hw/a/t", "4821", replies=True)
    assert asked.splitlines() == [
        "Approval requested: Wire",
        "Invoice 118",
        'Action: wire_money(amount=4200, to="ACME Ltd")',
        "Reply YES 4821 or NO 4821 (a reason may follow).",
        "Decide here: https://hw/a/t",
    ]
    slack = ask_text("Wire", None, None, "https://hw/a/t", None, replies=False)
    assert slack == "Approval requested: Wire\nDecide here: https://hw/a/t"
    assert "Reply YES or NO" in reminder_text("Wire", "u", None, replies=True)
    assert "YES 1111" in clarify_text([("A", "1111"), ("B", "2222")])
    assert "YES 2222" in clarify_text([("A", "1111"), ("B", "2222")])
    assert "Reply YES or NO" in clarify_text([("A", None)])
    # allowComment false: no reason is offered.
    bare = ask_text("Wire", None, None, "u", "4821", replies=True, comments=False)
    assert "Reply YES 4821 or NO 4821.\n" in bare
    assert reminder_text("Wire", "u", None, replies=True, comments=False).count("reason") == 0
    assert "reason" not in clarify_text([("A", None)], comments=False)
    assert "reason" not in clarify_text([("A", "1111"), ("B", "2222")], comments=False)


def test_a_callees_answer() -> None:
    from humanwire.server.approvals.texts import call_answer, call_prompt

    assert call_answer(["1"]) == ("approve", "call_keypad")
    assert call_answer(["2#"]) == ("reject", "call_keypad")
    assert call_answer(["hello?", "Reject, too much"]) == ("reject", "call_speech")
    assert call_answer(["yes", "no"]) == ("approve", "call_speech")  # the first stands
    assert call_answer(["3", "what is this", ""]) is None
    prompt = call_prompt("Wire", None, {"name": "pay", "arguments": {"n": 1}})
    assert "The action: pay(n=1)." in prompt and "press 1 to approve" in prompt
