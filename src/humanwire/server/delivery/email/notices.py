"""What the person asked is told when a reply to their email is not taken as their
answer (the ask waits on): sent to the address asked, never to the reply's ``From``."""

from __future__ import annotations

__all__ = ["from_another_address", "not_signed", "nothing_to_read"]


def from_another_address(sender: str, asked: str) -> str:
    came_from = sender or "an address that could not be read"
    return (
        f"A reply to this message came from {came_from}, not from {asked}: it was not "
        "taken as your answer (a forwarded email lets anyone reply to it). To answer, "
        f"reply to this email from {asked}."
    )


def not_signed(domain: str) -> str:
    return (
        "Your reply was not taken as your answer: an answer is taken only when your mail "
        f"system signs it (DKIM) for {domain}, and this one was not. Reply from your usual "
        "mail account, or ask whoever sent this message."
    )


def nothing_to_read() -> str:
    return (
        "Your reply had no text that could be read, so it was not taken as your answer. "
        "To answer, reply to this email with your answer written in the message."
    )
