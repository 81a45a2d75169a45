"""Form validation patterns: one dialect that the form page and the service read alike.

A pattern is the source of a JavaScript ``RegExp`` with the ``u`` flag (the page tests
``new RegExp(pattern, "u").test(answer)``), limited to what the service can match with
the same meaning in RE2, a linear-time engine, so no pattern can hold the event loop the
way ``^(a+)+$`` held Python's backtracking ``re``. Search semantics: the author anchors
with ``^…$``.

Accepted: literal characters; ``.``; ``^`` and ``$`` (start and end of the answer: no
multiline); ``\\b`` ``\\B``; ``\\d`` ``\\D`` ``\\w`` ``\\W`` ``\\s`` ``\\S``; ``\\t`` ``\\n``
``\\v`` ``\\f`` ``\\r`` ``\\0`` ``\\cX`` ``\\xHH`` ``\\uHHHH`` ``\\u{H…}``; the escaped syntax
characters ``\\^ \\$ \\\\ \\. \\* \\+ \\? \\( \\) \\[ \\] \\{ \\} \\| \\/``; classes ``[…]`` and
``[^…]`` with ranges and the escapes above (``[\\b]`` is a backspace, ``\\-`` a hyphen);
groups ``(…)`` and ``(?:…)``; alternation; quantifiers ``* + ? {n} {n,} {n,m}`` (and their
lazy forms) with counts up to 1000, nested counts multiplying to at most 1000.

Refused, with the reason: backreferences, lookahead and lookbehind (RE2 has neither),
named groups, inline flags and other ``(?…)`` groups, ``\\A`` ``\\Z`` ``\\z``, ``\\p{…}``,
possessive and doubled quantifiers, an unescaped ``{`` ``}`` or ``]`` outside a class or
``[`` inside one (where POSIX ``[:alpha:]`` would be read two ways), empty classes,
lone surrogates, any other escape, groups nested over ``MAX_NESTING`` deep, patterns over
``MAX_PATTERN_LENGTH`` characters or whose RE2 program outgrows ``PATTERN_MAX_MEM``. (The
form adds its own bounds: ``humanwire.types.forms``.)

Where the engines read a construct differently, the RE2 source spells out JavaScript's
meaning: ``.`` excludes ``\\r``, U+2028 and U+2029 as well as ``\\n``; ``\\s`` is
JavaScript's Unicode white space; ``\\d`` and ``\\w`` are ASCII in both; every literal
and class is written as code points, so nothing is left to either engine's reading.

``re2_source`` checks a pattern (``PatternError`` says why it is refused) and translates
it; ``compiled_pattern`` compiles that with RE2 within ``PATTERN_MAX_MEM``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "MAX_NESTING",
    "MAX_PATTERN_LENGTH",
    "MAX_REPEAT",
    "PATTERN_MAX_MEM",
    "CompiledPattern",
    "PatternError",
    "compiled_pattern",
    "re2_source",
]

MAX_PATTERN_LENGTH = 1000
"""Longest accepted pattern (characters)."""
MAX_REPEAT = 1000
"""Largest count in ``{n,m}``; counts nested inside each other multiply to at most this
(RE2's own limit)."""
MAX_NESTING = 50
"""Deepest nesting of groups (the parser recurses once per level)."""
PATTERN_MAX_MEM = 1 << 20
"""RE2's memory budget for one pattern (its program and its DFA cache): a pattern whose
program does not fit is refused, and matching one never takes more."""

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)
_SYNTAX = frozenset("^$\\.*+?()[]{}|/")
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_CONTROL = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}

Ranges = tuple[tuple[int, int], ...]


def _normalized(ranges: Iterable[tuple[int, int]]) -> Ranges:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return tuple(merged)


def _complement(ranges: Ranges) -> Ranges:
    result: list[tuple[int, int]] = []
    start = 0
    for low, high in ranges:
        if low > start:
            result.append((start, low - 1))
        start = high + 1
    if start <= _MAX_CODE_POINT:
        result.append((start, _MAX_CODE_POINT))
    return tuple(result)


_DIGIT: Ranges = ((0x30, 0x39),)
_WORD: Ranges = _normalized([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
# JavaScript's \s: WhiteSpace and LineTerminator (Zs of current Unicode, U+FEFF, and
# \t \n \v \f \r U+2028 U+2029). RE2's \s is [\t\n\f\r ] only.
_SPACE: Ranges = _normalized(
    [
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ]
)
# JavaScript's . without the s flag: anything but a LineTerminator.
_DOT: Ranges = _complement(_normalized([(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]))
_CLASS_ESCAPES: dict[str, Ranges] = {
    "d": _DIGIT,
    "D": _complement(_DIGIT),
    "w": _WORD,
    "W": _complement(_WORD),
    "s": _SPACE,
    "S": _complement(_SPACE),
}


class PatternError(ValueError):
    """Why a pattern is refused; ``str()`` reads after the word "pattern"."""


def _code_point(value: int) -> str:
    return f"\\x{{{value:x}}}"


@functools.lru_cache(maxsize=256)
def _class_source(ranges: Ranges) -> str:
    if not ranges:
        return f"[^{_code_point(0)}-{_code_point(_MAX_CODE_POINT)}]"  # matches nothing
    parts = [
        _code_point(low) if low == high else f"{_code_point(low)}-{_code_point(high)}"
        for low, high in ranges
    ]
    return "[" + "".join(parts) + "]"


class _Parser:
    """Recursive descent over ECMAScript's ``u``-mode pattern grammar, writing the RE2
    source as it goes. Each node also answers the largest product of repetition counts
    inside it, which RE2 bounds (``MAX_REPEAT``)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.pos = 0
        self.depth = 0

    # -- helpers -------------------------------------------------------------------
    def fail(self, message: str, at: int | None = None) -> NoReturn:
        where = self.pos if at is None else at
        raise PatternError(f"{message} (at character {where + 1})")

    def peek(self, offset: int = 0) -> str:
        return self.source[self.pos + offset : self.pos + offset + 1]

    def take(self) -> str:
        char = self.peek()
        self.pos += 1
        return char

    def literal(self, char: str, at: int) -> int:
        value = ord(char)
        if _SURROGATES[0] <= value <= _SURROGATES[1]:
            self.fail("holds a lone UTF-16 surrogate, which the service cannot match", at)
        return value

    # -- grammar -------------------------------------------------------------------
    def pattern(self) -> str:
        out, _ = self.disjunction()
        if self.pos < len(self.source):
            self.fail("is not a valid regular expression: unmatched )")
        return out

    def disjunction(self) -> tuple[str, int]:
        parts = [self.alternative()]
        while self.peek() == "|":
            self.pos += 1
            parts.append(self.alternative())
        return "|".join(p for p, _ in parts), max(n for _, n in parts)

    def alternative(self) -> tuple[str, int]:
        out: list[str] = []
        most = 1
        while self.peek() not in ("", "|", ")"):
            source, repeats = self.term()
            out.append(source)
            most = max(most, repeats)
        return "".join(out), most

    def term(self) -> tuple[str, int]:
        start = self.pos
        char = self.peek()
        if char in ("^", "$") or (char == "\\" and self.peek(1) in ("b", "B")):
            self.pos += 2 if char == "\\" else 1
            if self.quantifier_ahead():
                self.fail("repeats an assertion (^, $, \\b or \\B), which cannot be repeated")
            return self.source[start : self.pos], 1
        if char in ("*", "+", "?"):
            self.fail("is not a valid regular expression: nothing to repeat")
        if char == "{":
            if self.quantifier_ahead():
                self.fail("is not a valid regular expression: nothing to repeat")
            self.fail("has a lone {: write \\{ for the character")
        if char in ("}", "]"):
            self.fail(f"has a lone {char}: write \\{char} for the character")
        if char == "(":
            body, repeats = self.group()
            return self.quantified(f"(?:{body})", repeats)
        return self.quantified(self.atom(), 1)

    def quantifier_ahead(self) -> bool:
        char = self.peek()
        if char in ("*", "+", "?"):
            return True
        return char == "{" and self.counts() is not None

    def counts(self) -> tuple[int, int | None, int] | None:
        """``(min, max or None, length)`` of a ``{n}``/``{n,}``/``{n,m}`` at ``pos``."""
        source, index = self.source, self.pos + 1

        def digits(at: int) -> int:
            end = at
            while end < len(source) and source[end] in _DIGITS:
                end += 1
            return end

        end = digits(index)
        if end == index:
            return None
        low_text = source[index:end]
        high_text: str | None = low_text
        if end < len(source) and source[end] == ",":
            after = digits(end + 1)
            high_text = source[end + 1 : after] or None
            end = after
        if end >= len(source) or source[end] != "}":
            return None
        low = _count(low_text)
        high = None if high_text is None else _count(high_text)
        return low, high, end + 1 - self.pos

    def quantified(self, atom: str, repeats: int) -> tuple[str, int]:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.pos += 1
            suffix = char
        elif char == "{" and (counts := self.counts()) is not None:
            low, high, length = counts
            if max(low, high or 0) > MAX_REPEAT:
                self.fail(f"repeats more than {MAX_REPEAT} times")
            if high is not None and high < low:
                self.fail("is not a valid regular expression: numbers out of order in {}")
            repeats *= max(high or low, 1)
            if repeats > MAX_REPEAT:
                self.fail(f"nests repetition counts that multiply to more than {MAX_REPEAT}")
            self.pos += length
            suffix = f"{{{low}}}" if high == low else f"{{{low},{'' if high is None else high}}}"
        else:
            return atom, repeats
        if self.peek() == "?":
            self.pos += 1  # lazy: the same yes or no as greedy
        if self.quantifier_ahead():
            self.fail("repeats a repetition (a possessive or doubled quantifier)")
        return atom + suffix, repeats

    def group(self) -> tuple[str, int]:
        start = self.pos
        self.pos += 1
        if self.peek() == "?":
            ahead = self.source[self.pos + 1 : self.pos + 3]
            if ahead.startswith(":"):
                self.pos += 2
            elif ahead[:1] in ("=", "!"):
                self.fail("uses a lookahead (?= or (?!, which the service cannot match", start)
            elif ahead in ("<=", "<!"):
                self.fail("uses a lookbehind (?<= or (?<!, which the service cannot match", start)
            elif ahead[:1] == "<":
                self.fail("uses a named group (?<name>: write (…) or (?:…)", start)
            elif ahead[:1] == "P":
                self.fail("uses Python's (?P…) syntax, which browsers do not read", start)
            else:
                self.fail("uses inline flags or another (?…) group; only (?:…) is supported", start)
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.fail(f"nests groups more than {MAX_NESTING} deep", start)
        body = self.disjunction()
        self.depth -= 1
        if self.peek() != ")":
            self.fail("is not a valid regular expression: missing )", start)
        self.pos += 1
        return body

    def atom(self) -> str:
        at = self.pos
        char = self.take()
        if char == ".":
            return _class_source(_DOT)
        if char == "[":
            return _class_source(self.character_class(at))
        if char == "\\":
            escaped = self.escape(at, in_class=False)
            if isinstance(escaped, tuple):
                return _class_source(escaped)
            return _code_point(escaped)
        return _code_point(self.literal(char, at))

    def escape(self, at: int, *, in_class: bool) -> int | Ranges:
        """After a backslash: a code point, or the ranges of a class escape."""
        char = self.take()
        if char == "":
            self.fail("ends with a lone \\", at)
        if char in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[char]
        if char in _CONTROL:
            return _CONTROL[char]
        if char in _SYNTAX:
            return ord(char)
        if in_class and char == "-":
            return ord("-")
        if in_class and char == "b":
            return 0x08
        if char == "0" and self.peek() not in _DIGITS:
            return 0
        if char in _DIGITS:
            self.fail("uses a backreference or octal escape, which is not supported", at)
        if char == "k":
            self.fail("uses a named backreference \\k, which is not supported", at)
        if char in ("p", "P"):
            self.fail("uses a Unicode property escape \\p{…}, which is not supported", at)
        if char in ("A", "Z", "z"):
            self.fail(f"uses \\{char}, which browsers do not read: anchor with ^ and $", at)
        if char == "c":
            letter = self.peek()
            if letter.isascii() and letter.isalpha():
                self.pos += 1
                return ord(letter) % 32
            self.fail("has \\c without a letter after it", at)
        if char == "x":
            return self.hex_digits(2, at)
        if char == "u":
            return self.unicode_escape(at)
        if char == "-":
            self.fail("has \\- outside a character class: write - for the character", at)
        self.fail(f"has the unknown escape \\{char}", at)

    def hex_digits(self, count: int, at: int) -> int:
        text = self.source[self.pos : self.pos + count]
        if len(text) != count or not _HEX.issuperset(text):
            self.fail(f"has \\{self.source[at + 1]} without {count} hex digits after it", at)
        self.pos += count
        return int(text, 16)

    def unicode_escape(self, at: int) -> int:
        if self.peek() == "{":
            end = self.source.find("}", self.pos)
            digits = self.source[self.pos + 1 : end] if end > 0 else ""
            if not digits or not _HEX.issuperset(digits):
                self.fail("has \\u{ without hex digits and } after it", at)
            self.pos = end + 1
            value = int(digits, 16) if len(digits) <= 8 else _MAX_CODE_POINT + 1
            if value > _MAX_CODE_POINT:
                self.fail("has \\u{…} above 10FFFF", at)
        else:
            value = self.hex_digits(4, at)
            if 0xD800 <= value <= 0xDBFF and self.source[self.pos : self.pos + 2] == "\\u":
                saved = self.pos
                self.pos += 2
                trail = self.hex_digits(4, at) if self.peek() != "{" else -1
                if 0xDC00 <= trail <= 0xDFFF:
                    return 0x10000 + ((value - 0xD800) << 10) + (trail - 0xDC00)
                self.pos = saved
        if _SURROGATES[0] <= value <= _SURROGATES[1]:
            self.fail("holds a lone UTF-16 surrogate, which the service cannot match", at)
        return value

    def character_class(self, start: int) -> Ranges:
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        if self.peek() == "]":
            self.fail("has an empty class [] or [^], which is not supported", start)
        ranges: list[tuple[int, int]] = []
        while True:
            char = self.peek()
            if char == "":
                self.fail("is not a valid regular expression: missing ]", start)
            if char == "]":
                self.pos += 1
                break
            at = self.pos
            low = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                high = self.class_atom()
                if isinstance(low, tuple) or isinstance(high, tuple):
                    self.fail("uses a class escape (\\d, \\w, \\s …) as the end of a range", at)
                if high < low:
                    self.fail("is not a valid regular expression: range out of order", at)
                ranges.append((low, high))
            elif isinstance(low, tuple):
                ranges.extend(low)
            else:
                ranges.append((low, low))
        result = _normalized(ranges)
        return _complement(result) if negated else result

    def class_atom(self) -> int | Ranges:
        at = self.pos
        char = self.take()
        if char == "\\":
            return self.escape(at, in_class=True)
        if char == "[":
            self.fail(
                "has [ inside a character class: write \\[ for the character "
                "(POSIX classes like [:alpha:] are not supported)",
                at,
            )
        return self.literal(char, at)


def _count(text: str) -> int:
    # Beyond any limit either way; int() of a long digit string is not needed.
    return int(text) if len(text) <= 7 else MAX_REPEAT * MAX_REPEAT + 1


@functools.lru_cache(maxsize=1024)
def re2_source(pattern: str) -> str:
    """The RE2 source that matches what ``pattern`` matches in JavaScript (``u`` flag);
    raises ``PatternError`` for a pattern outside the dialect."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"is longer than {MAX_PATTERN_LENGTH} characters")
    return _Parser(pattern).pattern()


class CompiledPattern:
    """An accepted pattern compiled by RE2."""

    __slots__ = ("_regexp", "program_size", "source")

    def __init__(self, source: str, regexp: Any) -> None:
        self.source = source
        """The RE2 source it was compiled from."""
        self.program_size: int = regexp.programsize
        """RE2 program instructions: what compiling and matching it cost."""
        self._regexp = regexp

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text`` (which must encode as UTF-8:
        no lone surrogates). Linear in ``len(text)``; RE2 releases the GIL meanwhile."""
        return self._regexp.search(text.encode("utf-8")) is not None


@functools.lru_cache(maxsize=128)
def compiled_pattern(pattern: str) -> CompiledPattern:
    """``pattern`` compiled by RE2; ``PatternError`` when it is outside the dialect or
    its program does not fit ``PATTERN_MAX_MEM``."""
    import re2  # lazily: only forms with validation rules need it

    source = re2_source(pattern)
    options = re2.Options()
    options.max_mem = PATTERN_MAX_MEM
    options.log_errors = False
    options.never_capture = True
    try:
        return CompiledPattern(source, re2.compile(source, options))
    except re2.error as exc:
        # What the parser let through is valid RE2; RE2 refuses only what is too big
        # ("pattern too large", or repetitions whose expansion is).
        reason = exc.args[0] if exc.args else b""
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(
            f"is too large to match quickly: its repetitions make too big a program ({reason})"
        ) from None
