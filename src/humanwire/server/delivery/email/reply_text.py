"""The reply a person wrote, without the quoted history and the signature below it.

The splitting is ``mail-parser-reply``'s (the attribution lines of Gmail, Apple Mail,
Outlook and Thunderbird in a dozen languages, ``-- `` signatures, "Sent from my
iPhone"); around it: an HTML-only message is turned into text first (Gmail's and Apple
Mail's quote blocks dropped), the input is bounded (hostile mail must not cost seconds),
quoted lines left at the end are dropped, and a message the splitter would empty keeps
its text rather than answering nothing.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["MAX_REPLY_INPUT", "html_to_text", "reply_text"]

MAX_REPLY_INPUT = 64_000
"""Characters of a body looked at: a reply sits at the top; what is past this is history
(or an attack on the splitter's regular expressions)."""

MAX_SPLIT_LINE = 400
"""Longer lines are no attribution ("On … wrote:"): they reach the splitter as a short
placeholder, since its patterns take cubic time in the length of one line."""

_QUOTED = re.compile(r"^\s*>")
# Outlook's and Gmail's quote containers, Apple Mail's cite blocks.
_QUOTE_IDS = frozenset({"divrplyfwdmsg", "appendonsend", "mail-editor-reference-message-container"})
_QUOTE_CLASSES = frozenset({"gmail_quote", "gmail_extra", "yahoo_quoted", "moz-cite-prefix"})
_BLOCKS = frozenset({"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "hr"})
_SKIP = frozenset({"script", "style", "head", "title"})
_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr"})


class _TextOfHtml(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._stack: list[tuple[str, bool]] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: (value or "") for name, value in attrs}
        classes = set(values.get("class", "").lower().split())
        hides = (
            tag in _SKIP
            or (tag == "blockquote")
            or values.get("id", "").lower() in _QUOTE_IDS
            or bool(classes & _QUOTE_CLASSES)
        )
        if tag in _BLOCKS and not self._hidden:
            self.parts.append("\n")
        if tag in _VOID:
            return
        self._stack.append((tag, hides))
        if hides:
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        # Close up to the matching open tag (HTML in mail is rarely well formed).
        for index in range(len(self._stack) - 1, -1, -1):
            if self._stack[index][0] == tag:
                for _name, hides in self._stack[index:]:
                    self._hidden -= hides
                del self._stack[index:]
                break
        if tag in _BLOCKS and not self._hidden:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """The visible text of an HTML mail body, without its quote blocks."""
    parser = _TextOfHtml()
    try:
        parser.feed(markup[: MAX_REPLY_INPUT * 4])
        parser.close()
    except (AssertionError, ValueError):  # pragma: no cover - html.parser is lenient
        pass
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
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

    text = body.replace("\r\n", "\n")[:MAX_REPLY_INPUT]
    if not text.strip():
        return ""
    long_lines: list[str] = []

    def park(match: re.Match[str]) -> str:
        long_lines.append(match.group(0).strip())
        return f"hw-long-line-{len(long_lines) - 1}-hw"

    shortened = re.sub(rf"[^\n]{{{MAX_SPLIT_LINE + 1},}}", park, text)
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
