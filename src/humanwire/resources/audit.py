"""The account's audit log: ``GET /audit?after=&limit=``, a page at a time or every
entry from a cursor on."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Generic, TypeVar, overload

from typing_extensions import Self

from humanwire._http import AsyncDriver, Flow, SyncDriver
from humanwire.errors import invalid_request
from humanwire.types.approvals import AuditEntry, AuditPage

from ._base import AsyncMode, ModeT, Resource, SyncMode, endpoint

__all__ = ["MAX_AUDIT_PAGE", "Audit"]

MAX_AUDIT_PAGE = 1000
"""The most entries one ``GET /audit`` returns."""

T = TypeVar("T")


def _cursor(after: str | int | None) -> str | None:
    if after is None:
        return None
    if isinstance(after, bool) or not isinstance(after, (str, int)) or str(after).strip() == "":
        raise invalid_request("after must be a cursor (a page's next)", field="after")
    return str(after)


def _limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_AUDIT_PAGE:
        raise invalid_request(f"limit must be from 1 to {MAX_AUDIT_PAGE}", field="limit")
    return limit


class _entries(Generic[T]):
    """Every entry from a cursor on, page after page: an iterator on a sync resource, an
    async iterator on an async one (the pages are ``Flow``s, driven like any call)."""

    def __init__(self, fn: Callable[[Any, str | None, int | None], Flow[AuditPage]]) -> None:
        self._fn = fn
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(
        self, obj: Resource[SyncMode], owner: type[Any]
    ) -> Callable[..., Iterator[AuditEntry]]: ...

    @overload
    def __get__(
        self, obj: Resource[AsyncMode], owner: type[Any]
    ) -> Callable[..., AsyncIterator[AuditEntry]]: ...

    def __get__(self, obj: Resource[Any] | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        page = self._fn

        if isinstance(obj._client._driver, AsyncDriver):

            async def entries_async(
                *, after: str | int | None = None, page_size: int | None = None
            ) -> AsyncIterator[AuditEntry]:
                cursor, size = _cursor(after), _limit(page_size)
                while True:
                    driver = obj._client._driver
                    assert isinstance(driver, AsyncDriver)
                    found = await driver.run(page(obj, cursor, size))
                    for entry in found.entries:
                        yield entry
                    if found.next is None or not found.entries:
                        return
                    cursor = found.next

            return entries_async

        def entries_sync(
            *, after: str | int | None = None, page_size: int | None = None
        ) -> Iterator[AuditEntry]:
            cursor, size = _cursor(after), _limit(page_size)
            while True:
                driver = obj._client._driver
                assert isinstance(driver, SyncDriver)
                found = driver.run(page(obj, cursor, size))
                yield from found.entries
                if found.next is None or not found.entries:
                    return
                cursor = found.next

        return entries_sync


class Audit(Resource[ModeT]):
    """The account's audit log: every approval request, decision, reminder, escalation,
    timeout and consumption, hash-chained (``humanwire audit verify`` checks a copy)."""

    def _page(self, after: str | None, limit: int | None) -> Flow[AuditPage]:
        params = {"after": after, "limit": limit}
        return self._get("/audit", AuditPage, params=params)  # type: ignore[no-any-return]

    @endpoint
    def list(self, *, after: str | int | None = None, limit: int | None = None) -> Flow[AuditPage]:
        """``GET /audit``: one page of entries after the cursor ``after`` (from the start
        without it); its ``next`` is the following page's cursor (None at the end)."""
        return self._page(_cursor(after), _limit(limit))

    @_entries
    def entries(self, after: str | None, limit: int | None) -> Flow[AuditPage]:
        """``for entry in client.audit.entries(after=None, page_size=None)`` (``async for``
        on ``AsyncHumanWire``): every entry from the cursor on, a page at a time."""
        return self._page(after, limit)
