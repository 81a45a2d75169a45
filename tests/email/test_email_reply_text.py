"""The reply without quoted history or signature, over bodies shaped as Gmail, Outlook
and Apple Mail write them."""

from __future__ import annotations

import time

import pytest

from humanwire.server.delivery.email import html_to_text, reply_text
from humanwire.server.delivery.email.reply_text import readable

GMAIL = """Yes, ship it on Friday.

On Tue, Nov 24, 2026 at 3:04\u202fPM Acme Agent <agent@acme.example> wrote:
> Ship the release on Friday?
>
> Reply to this email to answer.
"""
APPLE_MAIL = """Yes please

Sent from my iPhone

> On 24 Nov 2026, at 15:04, Acme Agent <agent@acme.example> wrote:
>
> Ship the release on Friday?
"""
OUTLOOK = """No, wait until Monday.

Best regards,
Grace Hopper
Head of Engineering

________________________________
From: Acme Agent <agent@acme.example>
Sent: Tuesday, November 24, 2026 3:04 PM
To: Grace Hopper <grace@example.com>
Subject: Ship the release?

Ship the release on Friday?
"""
OUTLOOK_ORIGINAL = """Approved.

-----Original Message-----
From: Acme Agent <agent@acme.example>
Sent: Tuesday, November 24, 2026 3:04 PM
Subject: Approve?

Approve the payment?
"""
SIGNATURE = "Approved.\n\n-- \nAda Lovelace\nAnalytical Engines Ltd\n"
GERMAN = """Ja, bitte.

Am Di., 24. Nov. 2026 um 15:04 Uhr schrieb Acme Agent <agent@acme.example>:
> Freigeben?
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (GMAIL, "Yes, ship it on Friday."),
        (APPLE_MAIL, "Yes please"),
        (OUTLOOK, "No, wait until Monday."),
        (OUTLOOK_ORIGINAL, "Approved."),
        (SIGNATURE, "Approved."),
        (GMAIL.replace("\n", "\r\n"), "Yes, ship it on Friday."),
        ("ok\n\n> Ship?\n> more\n", "ok"),
        ("Thanks, that's fine", "Thanks, that's fine"),
        ("long " * 300 + "\n\n" + GMAIL.split("\n", 1)[1], ("long " * 300).strip()),
    ],
    ids=[
        "gmail",
        "apple",
        "outlook",
        "outlook-original",
        "signature",
        "crlf",
        "bare-quote",
        "thanks",
        "long-line",
    ],
)
def test_the_reply_is_what_the_person_wrote(body: str, expected: str) -> None:
    assert reply_text(body) == expected


def test_other_languages_when_asked() -> None:
    assert reply_text(GERMAN, languages=("de", "en")) == "Ja, bitte."


def test_only_quotes_is_an_empty_reply() -> None:
    assert reply_text("On Tue, Nov 24, 2026 at 3:04 PM Acme wrote:\n> Ship?\n") == ""
    assert reply_text("> Ship?\n") == ""
    assert reply_text("  \n") == ""


def test_html_only_replies_lose_their_quote_blocks() -> None:
    gmail = (
        '<div dir="ltr">Yes, <b>ship</b> it.<br>Ada</div><br>'
        '<div class="gmail_quote"><div class="gmail_attr">On Tue, Acme wrote:</div>'
        "<blockquote>Ship?</blockquote></div>"
    )
    assert html_to_text(gmail) == "Yes, ship it.\nAda"
    apple = '<html><body>Sure<br><blockquote type="cite">Ship?</blockquote></body></html>'
    assert html_to_text(apple) == "Sure"
    outlook = (
        "<html><head><style>p{}</style></head><body><p>Fine by me</p>"
        '<div id="appendonsend"></div><hr><div id="divRplyFwdMsg"><b>From:</b> Acme</div>'
        "</body></html>"
    )
    assert reply_text(html_to_text(outlook)).startswith("Fine by me")
    assert html_to_text("<p>a &amp; b <script>alert(1)</script></p>") == "a & b"


def test_hostile_bodies_are_bounded() -> None:
    for body in (
        "From: x\n" * 50_000,
        "a " * 500_000,
        "> " * 300_000,
        "-" * 400_000,
        "On " * 200_000 + "wrote:",
    ):
        started = time.monotonic()
        reply_text(body)
        assert time.monotonic() - started < 5


def _seconds(action: object) -> float:
    started = time.monotonic()
    action()  # type: ignore[operator]
    return time.monotonic() - started


def test_hostile_html_costs_what_plain_markup_of_its_size_costs() -> None:
    plain = "<div class='m'><p>some <b>text</b></p></div>\n" * 5_000
    baseline = min(_seconds(lambda: html_to_text(plain)) for _ in range(3))
    for body in (
        "<!--" * 60_000,  # html.parser rescanned from each: minutes
        "<" * 240_000,
        "<a " + 'x="' * 80_000,
        "<div>" * 48_000 + "</span>" * 48_000,
        "<script>" * 30_000,
        "&#" * 120_000,
    ):
        assert _seconds(lambda body=body: html_to_text(body)) < 10 * baseline + 1, body[:10]


def test_readable_text_is_something_a_person_wrote() -> None:
    assert readable("ok") and readable("👍") and readable("?") and readable("42")
    assert not readable("") and not readable(" \n\t") and not readable("\ufffd\ufffd \x01\u200b")
