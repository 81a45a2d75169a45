"""``GET /readyz``: whether this service should be sent traffic.

``/healthz`` says the process answers (and is not stopping); ``/readyz`` also asks the
database a question (and, after a write failed, whether a write works again), checks its
schema is the one this code needs, and reports what each
real provider made of its credentials at start. A load balancer or orchestrator routes
on it; the body names the failing check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..store.commits import StoreUnavailable

if TYPE_CHECKING:
    from ..delivery.real import AttachedProvider
    from ..engine import Engine

__all__ = ["DATABASE_TIMEOUT", "Check", "ReadinessProbe"]

DATABASE_TIMEOUT = 2.0
"""Seconds the database has to answer before it counts as unreachable (a probe must
answer well inside an orchestrator's own timeout)."""


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str


class ReadinessProbe:
    """The checks of ``/readyz``. The database is asked off the event loop (the stores
    are synchronous), at most one question at a time: probes arriving while one is
    unanswered share it, so an unreachable database never piles up threads."""

    def __init__(
        self,
        engine: Engine,
        providers: Sequence[AttachedProvider],
        *,
        timeout: float = DATABASE_TIMEOUT,
    ) -> None:
        self.engine = engine
        self.providers = list(providers)
        self.timeout = timeout
        self._query: asyncio.Future[list[int]] | None = None

    async def checks(self) -> dict[str, Check]:
        checks: dict[str, Check] = {
            "accepting": Check(False, "the service is stopping")
            if self.engine.draining
            else Check(True, "accepting requests")
        }
        checks.update(await self._database())
        for provider in self.providers:
            credentials = provider.credentials
            checks[provider.name] = Check(credentials.ready, credentials.detail)
        return checks

    async def _database(self) -> dict[str, Check]:
        if self._query is None or self._query.done():
            self._query = asyncio.ensure_future(self.engine.store.pending_migrations())
        unchecked = Check(False, "not checked: the database did not answer")
        try:
            pending = await asyncio.wait_for(asyncio.shield(self._query), self.timeout)
        except asyncio.TimeoutError:
            return {
                "database": Check(False, f"no answer within {self.timeout:g} s"),
                "migrations": unchecked,
            }
        except Exception as exc:  # the driver's error, whatever it is, is the answer
            # Drivers do not echo passwords; the first line says what failed.
            reason = (str(exc).strip().splitlines() or [""])[0][:300]
            return {
                "database": Check(False, f"query failed: {type(exc).__name__}: {reason}"),
                "migrations": unchecked,
            }
        if pending:
            versions = ", ".join(str(version) for version in pending)
            migrations = Check(
                False,
                f"schema version(s) {versions} not applied: run humanwire db migrate "
                "(or restart a replica: serve applies them)",
            )
        else:
            migrations = Check(True, "schema up to date")
        return {"database": await self._writes(), "migrations": migrations}

    async def _writes(self) -> Check:
        """After a write failed (the disk full, a commit lost): a test write, so the
        service reports ready again by itself once writes work, without a restart."""
        store = self.engine.store
        if store.write_failure is None:
            return Check(True, "answered")
        try:
            await asyncio.wait_for(store.check_writable(), self.timeout)
        except asyncio.TimeoutError:
            return Check(False, f"cannot store writes: no answer within {self.timeout:g} s")
        except StoreUnavailable as exc:
            return Check(False, f"cannot store writes: {exc.reason}")
        return Check(True, "answered; writes work again")
