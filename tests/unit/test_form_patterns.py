"""The form pattern dialect (``humanwire.types._pattern``): what it accepts, how it reads
each construct (JavaScript's meaning, matched by RE2), what it refuses and why, and the
bounds on what a pattern may cost. The browser side of the same table is
``tests/browser/test_rule_parity.py``; the 400s on the wire, ``test_types.py``."""

from __future__ import annotations

import time

import pytest

from humanwire.types._pattern import (
    MAX_PATTERN_LENGTH,
    PatternError,
    compiled_pattern,
    re2_source,
)


def matches(pattern: str, text: str) -> bool:
    return compiled_pattern(pattern).search(text)


def refusal(pattern: str) -> str:
    with pytest.raises(PatternError) as info:
        compiled_pattern(pattern)
    return str(info.value)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        # search semantics; ^ and $ are the ends of the answer only (no multiline, and $
        # does not match before a final newline as Python's does)
        (r"\d", "ab1", True),
        (r"^\d+$", "123", True),
        (r"^a$", "a\n", False),
        (r"^b", "a\nb", False),
        (r"a$", "a\nb", False),
        # . is JavaScript's: no line terminator at all (RE2's . takes \r, U+2028, U+2029)
        ("^.$", "\n", False),
        ("^.$", "\r", False),
        ("^.$", "\u2028", False),
        ("^.$", "\u2029", False),
        ("^.$", "é", True),
        ("^.$", "😀", True),  # one code point, as with the u flag
        # \s is JavaScript's Unicode white space (RE2's is [\t\n\f\r ])
        (r"^\s$", "\v", True),
        (r"^\s$", "\u00a0", True),
        (r"^\s$", "\u3000", True),
        (r"^\s$", "\ufeff", True),
        (r"^\s$", "\u180e", False),
        (r"^\S$", "\u00a0", False),
        # \d \w \b are ASCII in both (Python's re read them as Unicode)
        (r"^\d$", "٣", False),
        (r"^\w$", "é", False),
        (r"^\w+$", "a_Z9", True),
        (r"\bé", " é", False),
        (r"\Bé", " é", True),
        (r"x\b", "x!", True),
        # classes
        (r"^[^a]$", "\n", True),
        (r"^[\w-]+$", "a-b", True),
        (r"^[\s\S]$", "\u2028", True),
        (r"^[^\s]$", "\u00a0", False),
        (r"^[\D]$", "5", False),
        (r"[\b]", "\b", True),
        (r"^[\-.]+$", "-.", True),
        (r"^[.]$", "x", False),
        ("^[😀-😎]$", "😃", True),
        (r"^[\u{1F600}-\u{1F60E}]$", "😃", True),
        # escapes
        (r"^\u{1F600}$", "😀", True),
        (r"^\uD83D\uDE00$", "😀", True),
        (r"^\x41\u0042$", "AB", True),
        (r"^\cJ$", "\n", True),
        (r"^\0$", "\x00", True),
        (r"^\t\n\v\f\r$", "\t\n\v\f\r", True),
        (r"^\^\$\\\.\*\+\?\(\)\[\]\{\}\|\/$", "^$\\.*+?()[]{}|/", True),
        # groups, alternation, quantifiers (lazy reads the same yes or no)
        (r"^(?:ab|a)+$", "aab", True),
        (r"^(a|b){2,3}$", "abab", False),
        (r"^x{2,}?$", "xxx", True),
        (r"^x{0}$", "", True),
        ("a|", "zzz", True),
        ("", "anything", True),
        # the attack of issue 34: linear, so just an answer
        (r"^(a+)+$", "a" * 5000 + "!", False),
        (r"^(a|a)*$", "a" * 5000, True),
    ],
)
def test_reads_like_javascript(pattern: str, text: str, expected: bool) -> None:
    assert matches(pattern, text) is expected


def test_the_catastrophic_pattern_costs_microseconds() -> None:
    compiled = compiled_pattern(r"^(a+)+$")
    hostile = "a" * 9_999 + "!"
    started = time.perf_counter()
    assert not compiled.search(hostile)
    # Python's re took 2.2 s at 27 characters, doubling with each one more.
    assert time.perf_counter() - started < 0.05


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", "backreference"),
        (r"(?<n>a)\k<n>", "named group"),
        (r"\k", "named backreference"),
        (r"a(?=b)", "lookahead"),
        (r"a(?!b)", "lookahead"),
        (r"(?<=a)b", "lookbehind"),
        (r"(?<!a)b", "lookbehind"),
        (r"(?P<n>a)", "Python's (?P"),
        (r"(?P=n)", "Python's (?P"),
        (r"(?i)abc", "inline flags"),
        (r"(?i:abc)", "inline flags"),
        (r"(?#note)", "inline flags"),
        (r"(?>a)", "inline flags"),
        (r"\Aabc", "anchor with ^ and $"),
        (r"abc\Z", "anchor with ^ and $"),
        (r"abc\z", "anchor with ^ and $"),
        (r"a*+", "possessive"),
        (r"a++", "possessive"),
        (r"a**", "doubled"),
        (r"a{2}{3}", "doubled"),
        (r"a*??", "doubled"),
        (r"^*", "assertion"),
        (r"\b+", "assertion"),
        (r"\p{L}", "Unicode property"),
        (r"\P{L}", "Unicode property"),
        (r"[[:alpha:]]", "POSIX"),
        ("[]", "empty class"),
        ("[^]", "empty class"),
        ("a{", "lone {"),
        ("a{,3}", "lone {"),
        ("a}", "lone }"),
        ("a]", "lone ]"),
        (r"\-", "outside a character class"),
        (r"\e", "unknown escape"),
        (r"\Q.\E", "unknown escape"),
        (r"\C", "unknown escape"),
        (r"[\B]", "unknown escape"),
        (r"[\d-z]", "end of a range"),
        (r"[a-\w]", "end of a range"),
        (r"\07", "octal"),
        (r"\x4", "hex digits"),
        (r"\u12", "hex digits"),
        (r"\u{}", "hex digits"),
        (r"\u{110000}", "above 10FFFF"),
        (r"\uD800", "surrogate"),
        ("\ud800", "surrogate"),
        (r"\c1", "without a letter"),
        ("a\\", "lone \\"),
        ("(ab", "missing )"),
        ("ab)", "unmatched )"),
        ("[ab", "missing ]"),
        ("*a", "nothing to repeat"),
        ("{2}", "nothing to repeat"),
        ("[z-a]", "out of order"),
        ("a{3,2}", "out of order"),
        ("a{1001}", "more than 1000"),
        ("a{99999999999999999999}", "more than 1000"),
        ("(a{10}){101}", "multiply to more than 1000"),
        ("((a{10}){10}){11}", "multiply to more than 1000"),
        ("(" * 51 + ")" * 51, "more than 50 deep"),
    ],
)
def test_refuses_what_the_engines_read_differently_or_re2_cannot(pattern: str, reason: str) -> None:
    assert reason in refusal(pattern)


def test_a_refusal_says_where() -> None:
    assert refusal(r"^\d+(?=x)").endswith("(at character 5)")


def test_length_is_bounded() -> None:
    assert re2_source("a" * MAX_PATTERN_LENGTH)
    assert refusal("a" * (MAX_PATTERN_LENGTH + 1)) == "is longer than 1000 characters"


def test_program_size_is_bounded_and_refusing_is_quick() -> None:
    # Each count alone is allowed; together they outgrow RE2's memory budget.
    assert compiled_pattern(r"^.{1,1000}$").program_size > 10_000
    started = time.perf_counter()
    assert "too large" in refusal(r"(?:.{1000})" * 20)
    assert "too large" in refusal(r"(?:x{1000})" * 90)
    assert time.perf_counter() - started < 1.0


def test_nested_groups_are_linear_to_check() -> None:
    # 50 nested counted groups: checked in one pass, not once per level.
    pattern = "(" * 50 + "a" + "){1}" * 50
    started = time.perf_counter()
    assert matches(pattern, "a")
    assert time.perf_counter() - started < 0.5


def test_every_literal_is_spelled_as_a_code_point() -> None:
    # Nothing is left to RE2's own reading of the author's text (POSIX classes, \Q…).
    assert re2_source("a[:b]") == r"\x{61}[\x{3a}\x{62}]"
    assert re2_source(r"^\d$") == r"^[\x{30}-\x{39}]$"
