"""The reply a person wrote, without the quoted history and the signature below it.

The splitting is ``mail-parser-reply``'s (the attribution lines of Gmail, Apple Mail,
Outlook and Thunderbird in a dozen languages, ``-- `` signatures, "Sent from my
iPhone"); around it: an HTML-only message is turned into text first (Gmail's and Apple
Mail's quote blocks dropped), the input is bounded (hostile mail must not cost seconds),
quoted lines left at the end are dropped, and a message the splitter would empty keeps
its text rather than answering nothing.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["MAX_HTML_INPUT", "MAX_REPLY_INPUT", "html_to_text", "readable", "reply_text"]

MAX_REPLY_INPUT = 32_000
"""Characters of a body looked at: a reply sits at the top; what is past this is history
(or an attack on the splitter's regular expressions)."""

MAX_HTML_INPUT = 256_000
"""Characters of an HTML body read (Outlook's markup is bulky; the reply is at its top)."""
MAX_TAGS = 10_000
"""Tags read; what follows is history (a reply's own text comes first)."""
MAX_OPEN_TAGS = 256
"""Open tags tracked; deeper ones are read as text without their own closing."""
MAX_TAG_SOURCE = 2_000
"""Characters of one tag searched for its ``id`` and ``class``."""

MAX_SPLIT_LINE = 160
"""Longer lines are no attribution ("On … wrote:"): they reach the splitter as a short
placeholder, since its patterns take cubic time in the length of one line."""

_LONG_LINE = 80
MAX_SPLIT_LONG_LINES = 40
"""Lines longer than 80 characters the splitter sees (the first ones: an attribution
follows the reply); later ones are parked too. Its cost per line grows with the cube of
the line's length: this bounds the whole."""

_QUOTED = re.compile(r"^\s*>")
_BLANK_RUNS = re.compile(r"\n{3,}")
# Outlook's and Gmail's quote containers, Apple Mail's cite blocks.
_QUOTE_IDS = frozenset({"divrplyfwdmsg", "appendonsend", "mail-editor-reference-message-container"})
_QUOTE_CLASSES = frozenset({"gmail_quote", "gmail_extra", "yahoo_quoted", "moz-cite-prefix"})
_BLOCKS = frozenset({"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "hr"})
_SKIP = frozenset({"script", "style", "head", "title"})
_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr"})
_TAG_START = re.compile(r"<[A-Za-z/!?]")
_TAG_NAME = re.compile(r"/?([A-Za-z][A-Za-z0-9:-]{0,31})")
# Every part optional past the name: no attempt fails after a long match (no backtracking).
_ATTRIBUTE = re.compile(r"""([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s"'>]*)))?""")


class _TextOfHtml:
    """The visible text of HTML in one forward pass: every search starts where the last
    ended (``str.find``), so the cost is linear in the input whatever its shape
    (``html.parser`` rescans an unclosed ``<!--`` from each ``<``: quadratic)."""

    def __init__(self, markup: str) -> None:
        self.markup = markup
        self.lower = markup.lower()
        self.parts: list[str] = []
        self.length = 0
        self._stack: list[tuple[str, bool]] = []
        self._open: dict[str, int] = {}
        self._hidden = 0

    def _text(self, start: int, end: int) -> None:
        if end > start and not self._hidden:
            chunk = self.markup[start:end]
            chunk = html.unescape(chunk) if "&" in chunk else chunk
            self.parts.append(chunk)
            self.length += len(chunk)

    def run(self) -> str:
        markup, end = self.markup, len(self.markup)
        text_from = pos = tags = 0
        while pos < end and self.length < MAX_REPLY_INPUT and tags < MAX_TAGS:
            tags += 1
            found = _TAG_START.search(markup, pos)  # "a < b" is text: passed over
            if found is None:
                break
            lt = found.start()
            if markup.startswith("<!--", lt):
                self._text(text_from, lt)
                close = markup.find("-->", lt + 4)
                text_from = pos = end if close < 0 else close + 3
                continue
            self._text(text_from, lt)
            gt = markup.find(">", lt + 1)
            if gt < 0:
                text_from = pos = end  # an unterminated tag: nothing after it is text
                break
            text_from = pos = gt + 1
            skip_to = self._tag(markup[lt + 1 : gt], pos)
            if skip_to is not None:
                text_from = pos = skip_to
        if tags < MAX_TAGS:
            self._text(text_from, end)
        return "".join(self.parts)

    def _tag(self, source: str, after: int) -> int | None:
        """Takes one tag; returns where the text goes on when its content is skipped
        (``<script>`` … ``</script>``)."""
        named = _TAG_NAME.match(source)
        if named is None:
            return None  # <!doctype …>, <?xml …?>
        tag = named.group(1).lower()
        if source.startswith("/"):
            self._close(tag)
            if tag in _BLOCKS and not self._hidden:
                self.parts.append("\n")
            return None
        hides = tag in _SKIP or tag == "blockquote" or ("=" in source and _quote_box(source))
        if tag in _BLOCKS and not self._hidden:
            self.parts.append("\n")
        if tag in _SKIP:
            close = self.lower.find("</" + tag, after)
            return len(self.markup) if close < 0 else close
        if tag in _VOID or source.endswith("/") or len(self._stack) >= MAX_OPEN_TAGS:
            return None
        self._stack.append((tag, hides))
        self._open[tag] = self._open.get(tag, 0) + 1
        self._hidden += hides
        return None

    def _close(self, tag: str) -> None:
        # Up to the matching open tag (HTML in mail is rarely well formed). Only a tag
        # that is open is looked for, and what is passed over is closed with it: each
        # entry is scanned once.
        if not self._open.get(tag):
            return
        for index in range(len(self._stack) - 1, -1, -1):
            if self._stack[index][0] == tag:
                for name, hides in self._stack[index:]:
                    self._hidden -= hides
                    self._open[name] -= 1
                del self._stack[index:]
                return


def _quote_box(source: str) -> bool:
    """Whether a tag's ``id`` or ``class`` names a mail client's quote container."""
    for match in _ATTRIBUTE.finditer(source, 0, min(len(source), MAX_TAG_SOURCE)):
        name = match.group(1).lower()
        if name in ("id", "class"):
            value = (match.group(2) or match.group(3) or match.group(4) or "").lower()
            if name == "id" and value in _QUOTE_IDS:
                return True
            if name == "class" and not _QUOTE_CLASSES.isdisjoint(value.split()):
                return True
    return False


def html_to_text(markup: str) -> str:
    """The visible text of an HTML mail body, without its quote blocks (linear time:
    at most ``MAX_HTML_INPUT`` characters are read)."""
    text = _TextOfHtml(markup[:MAX_HTML_INPUT]).run()
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _without_trailing_quotes(text: str) -> str:
    lines = text.splitlines()
    while lines and (not lines[-1].strip() or _QUOTED.match(lines[-1])):
        lines.pop()
    return "\n".join(lines).strip()


def reply_text(body: str, *, languages: tuple[str, ...] = ("en",)) -> str:
    """The newest reply in ``body`` (a text/plain body): above the attribution line
    ("On … wrote:", Outlook's "From: … Sent: …"), without the signature. Empty only
    when the person wrote nothing but quotes."""
    from mailparser_reply import EmailReplyParser

    # Lines stripped and blank runs folded to one blank line, as the splitter reads them
    # anyway: its patterns start with ``\s*^``, quadratic over a run of newlines.
    lines = body.replace("\r\n", "\n")[:MAX_REPLY_INPUT].split("\n")
    text = _BLANK_RUNS.sub("\n\n", "\n".join(line.strip() for line in lines))
    if not text.strip():
        return ""
    long_lines: list[str] = []
    kept_long = 0

    def park(match: re.Match[str]) -> str:
        nonlocal kept_long
        line = match.group(0)
        if len(line) <= MAX_SPLIT_LINE and kept_long < MAX_SPLIT_LONG_LINES:
            kept_long += 1
            return line
        long_lines.append(line.strip())
        return f"hw-long-line-{len(long_lines) - 1}-hw"

    shortened = re.sub(rf"[^\n]{{{_LONG_LINE + 1},}}", park, text)
    parsed = EmailReplyParser(languages=list(languages)).read(shortened)
    latest = parsed.replies[0] if parsed.replies else None
    if latest is not None and latest.headers:
        return ""  # the body starts with an attribution: nothing was written above it
    candidates = []
    if latest is not None:
        candidates += [latest.body, latest.full_body]
    candidates.append(shortened)
    for candidate in candidates:
        cleaned = _without_trailing_quotes(candidate)
        if cleaned:
            return re.sub(r"hw-long-line-(\d+)-hw", lambda m: long_lines[int(m.group(1))], cleaned)
    return ""


def readable(text: str) -> bool:
    """Whether ``text`` has anything a person wrote: a letter, digit, punctuation or
    symbol (an emoji counts), not only spaces, control or format characters and the
    replacement character a broken encoding decodes to."""
    return any(char != "\ufffd" and unicodedata.category(char)[0] not in "CZ" for char in text)
