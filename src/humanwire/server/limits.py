"""Abuse limits kept in memory: a per-account sliding-window rate limit and the spam
guard (the same text to many distinct recipients in a short window). Suspension itself
is persisted by the engine; these only count."""

from __future__ import annotations

import hashlib
from collections import deque

__all__ = ["RateLimiter", "SpamGuard", "fingerprint"]


class RateLimiter:
    """At most ``limit`` requests per ``window`` seconds per account (sliding log)."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window
        self._hits: dict[str, deque[float]] = {}

    def hit(self, account_id: str, now: float) -> float | None:
        """Counts one request; returns None when allowed, else seconds until it would be."""
        hits = self._hits.setdefault(account_id, deque())
        cutoff = now - self.window
        while hits and hits[0] <= cutoff:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(hits[0] + self.window - now, 0.001)
        hits.append(now)
        return None


def fingerprint(text: str) -> str:
    """The text as the spam guard counts it."""
    # Case and spacing do not make a bulk text a different one.
    normalized = " ".join(text.lower().split())
    return hashlib.sha256(normalized.encode()).hexdigest()


class SpamGuard:
    """Remembers, per account and text, which recipients got it and when."""

    def __init__(self, recipients: int, window: float) -> None:
        self.recipients = recipients
        self.window = window
        self._sent: dict[tuple[str, str], dict[str, float]] = {}

    def would_be_spam(self, account_id: str, text: str, to: str, now: float) -> bool:
        """Records the send of ``text`` to ``to``; True when it makes ``recipients``
        distinct recipients of the same text inside ``window``."""
        key = (account_id, fingerprint(text))
        seen = self._sent.setdefault(key, {})
        cutoff = now - self.window
        for recipient in [r for r, at in seen.items() if at <= cutoff]:
            del seen[recipient]
        seen[to] = now
        return len(seen) >= self.recipients

    def forget(self, account_id: str) -> None:
        for key in [key for key in self._sent if key[0] == account_id]:
            del self._sent[key]
