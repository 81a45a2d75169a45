"""How a reply to a shared sender names one of several accounts' open requests, before
any service: the codes read (an approval's after its YES / NO, an ask's first or after a
YES / NO), an ask's answer without its code, and an ask shown with six digits when its
four are another open request's (the service-level path: tests/providers)."""

from __future__ import annotations

import itertools

from humanwire.server.engine.sends import (
    Waiting,
    ask_codes,
    clarify_several_text,
    named,
    without_code,
)


def ask(interaction_id: str, account: str = "acc_a") -> Waiting:
    return Waiting(
        account, interaction_id, f"Ask {interaction_id}?", ask_codes(interaction_id), False
    )


def approval(interaction_id: str, code: str, account: str = "acc_b") -> Waiting:
    return Waiting(account, interaction_id, "Refund", (code,), True)


def test_codes_are_read_where_each_kind_names_them() -> None:
    colour = ask("int_colour")
    refund = approval("int_refund", "6006")
    code = colour.codes[0]
    waiting = [colour, refund]
    assert named(waiting, f"{code} blue") == [colour]
    assert named(waiting, f"yes {code}") == [colour]  # an ask answered "yes"
    assert named(waiting, "YES 6006 fine") == [refund]
    assert named(waiting, "6006 yes") == []  # an approval's code comes after the YES / NO
    assert named(waiting, "YES") == [] and named(waiting, "blue") == []
    assert named(waiting, f"blue {code}") == []  # only the first word, or after a YES / NO


def test_an_asks_answer_is_the_reply_without_its_code() -> None:
    codes = ("0421", "120421")
    assert without_code("0421 blue, with stripes", codes) == "blue, with stripes"
    assert without_code("0421: blue", codes) == "blue"
    assert without_code("yes 120421 see you", codes) == "yes see you"
    assert without_code("0421", codes) == ""


def test_an_ask_whose_four_digits_collide_is_shown_and_named_by_its_six() -> None:
    first, second = next(
        (a, b)
        for a, b in itertools.combinations((f"int_{n}" for n in range(2000)), 2)
        if ask_codes(a)[0] == ask_codes(b)[0]
    )
    four = ask_codes(first)[0]
    waiting = [ask(first), ask(second, "acc_b")]
    assert len(named(waiting, f"{four} blue")) == 2  # still ambiguous: neither is taken
    text = clarify_several_text(waiting)
    assert f"reply {ask_codes(first)[1]}" in text and f"reply {ask_codes(second)[1]}" in text
    assert f"reply {four} " not in text
    assert named(waiting, f"{ask_codes(second)[1]} blue") == [waiting[1]]


def test_the_clarifying_text_offers_a_reason_only_when_every_approval_takes_one() -> None:
    takes = approval("int_1", "1111")
    silent = Waiting("acc_c", "int_2", "Silent", ("2222",), True, comments=False)
    assert clarify_several_text([takes, ask("int_3")]).endswith("(a reason may follow).")
    assert "reason" not in clarify_several_text([takes, silent])
    assert "reason" not in clarify_several_text([ask("int_3"), ask("int_4", "acc_b")])
