"""Whether a message's DKIM signature verifies for a domain (dkimpy).

An email reply can be forged; one whose DKIM signature verifies for the approver's
domain was sent through that domain's mail system, so approvals may take it as the
approver's decision. A signature counts when:

- it verifies (body hash, signed headers, key from ``<selector>._domainkey.<d>``);
- its ``d=`` is the domain or a parent of it (relaxed alignment: ``d=acme.example`` for
  ``ada@mail.acme.example``), never a bare top-level name;
- it signs the whole body (no ``l=``: text appended after a partial body hash would be
  unsigned), and ``From`` (dkimpy requires it).

The key lookup is injectable (``dns``): tests sign with a key they make and serve its
public half from a dict. The check reads DNS and hashes the body: call
:func:`dkim_verifies_async` from the event loop, which runs it in a thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

__all__ = ["DnsTxt", "dkim_verifies", "dkim_verifies_async"]

DnsTxt = Callable[..., bytes | None]
"""``(name: bytes, timeout=…) -> the TXT record's text or None``, as dkimpy calls it."""

MAX_SIGNATURES = 5
"""Signatures tried at most (each may cost a DNS lookup)."""

_log = logging.getLogger("humanwire.email")


def _aligned(signer: str, domain: str) -> bool:
    signer, domain = signer.lower().rstrip("."), domain.lower().rstrip(".")
    if signer == domain:
        return True
    return "." in signer and domain.endswith("." + signer)


def dkim_verifies(
    message: bytes, domain: str, *, dns: DnsTxt | None = None, timeout: float = 5.0
) -> bool:
    """True when one of the message's DKIM signatures (the first few) verifies and is
    aligned with ``domain``; False for none, a broken one, a key not found, or any
    other domain's."""
    import dkim

    lookup = dns if dns is not None else dkim.dnsplug.get_txt
    try:
        checker = dkim.DKIM(message, timeout=int(max(1, timeout)))
        count = sum(1 for name, _ in checker.headers if name.lower() == b"dkim-signature")
    except Exception:  # a message dkimpy cannot even read is unsigned
        return False
    for index in range(min(count, MAX_SIGNATURES)):
        try:
            checker = dkim.DKIM(message, timeout=int(max(1, timeout)))
            verified = checker.verify(idx=index, dnsfunc=lookup)
        except Exception as exc:  # dkimpy raises many kinds on bad input
            _log.debug("DKIM signature %d unreadable: %s", index, type(exc).__name__)
            continue
        fields = checker.signature_fields or {}
        signer = (checker.domain or b"").decode("ascii", "replace")
        if verified and b"l" not in fields and _aligned(signer, domain):
            return True
    return False


async def dkim_verifies_async(
    message: bytes, domain: str, *, dns: DnsTxt | None = None, timeout: float = 5.0
) -> bool:
    """:func:`dkim_verifies` off the event loop."""
    return await asyncio.to_thread(dkim_verifies, message, domain, dns=dns, timeout=timeout)
