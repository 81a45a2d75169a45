"""The queue's filters (``/console?action=deploy&meta=agent%3Dbilling&sort=newest``): a
plain GET form above the queue, so a filtered queue can be bookmarked.

- ``action``: the action's name, exactly;
- ``meta``: ``key=value``, one entry of the request's ``metadata`` (the caller's own
  labels, such as the agent that asked), exactly;
- ``sort``: ``urgent`` (the nearest deadline first, then the newest: the default) or
  ``newest`` (the newest request first).

A value that cannot be read (too long, a control character, ``meta`` without ``=``, an
unknown ``sort``) is ``InvalidRequest`` naming the field: the route shows a 400 page with
the form. Parsing and filtering only; the route renders."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from humanwire.types import METADATA_MAX_KEY_LENGTH, METADATA_MAX_VALUE_LENGTH

from ..engine.approval_access import QueuedApproval
from ..errors import InvalidRequest
from ..forms.html import Html, join, render

__all__ = [
    "SORTS",
    "QueueFilter",
    "filter_form",
    "filtered",
    "metadata_links",
    "parse_queue_filter",
]

SORTS = {"urgent": "Most urgent first", "newest": "Newest first"}
MAX_ACTION = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class QueueFilter:
    action: str | None = None
    meta: tuple[str, str] | None = None
    sort: str = "urgent"

    @property
    def active(self) -> bool:
        return self.action is not None or self.meta is not None


def _text(query: Mapping[str, str], field: str, limit: int) -> str | None:
    value = query.get(field, "").strip()
    if not value:
        return None
    if len(value) > limit:
        raise InvalidRequest(f"{field} is at most {limit} characters", field=field)
    if _CONTROL.search(value):
        raise InvalidRequest(f"{field} holds a control character", field=field)
    return value


def parse_queue_filter(query: Mapping[str, str]) -> QueueFilter:
    """The filter the query asks for; ``InvalidRequest`` naming the field otherwise."""
    action = _text(query, "action", MAX_ACTION)
    meta = None
    raw = _text(query, "meta", METADATA_MAX_KEY_LENGTH + 1 + METADATA_MAX_VALUE_LENGTH)
    if raw is not None:
        key, sep, value = raw.partition("=")
        key = key.strip()
        if not sep or not key or len(key) > METADATA_MAX_KEY_LENGTH:
            raise InvalidRequest(
                f"meta is key=value (a key of 1 to {METADATA_MAX_KEY_LENGTH} characters)",
                field="meta",
            )
        meta = (key, value.strip())
    sort = query.get("sort", "").strip() or "urgent"
    if sort not in SORTS:
        raise InvalidRequest(f"sort is one of {', '.join(SORTS)}", field="sort")
    return QueueFilter(action, meta, sort)


def filtered(queue: Sequence[QueuedApproval], wanted: QueueFilter) -> list[QueuedApproval]:
    """The requests of ``queue`` the filter keeps, in its order (``queue`` comes most
    urgent first)."""
    kept = []
    for item in queue:
        action = item.request.action
        if wanted.action is not None and (action is None or action.name != wanted.action):
            continue
        if wanted.meta is not None:
            key, value = wanted.meta
            if (item.request.metadata or {}).get(key) != value:
                continue
        kept.append(item)
    if wanted.sort == "newest":
        kept.sort(key=lambda q: -q.created_at)
    return kept


def filter_form(wanted: QueueFilter) -> Html:
    """The GET form above the queue, holding the current values (escaped)."""
    options = join(
        render(
            '<option value="{value}"{selected}>{label}</option>',
            value=value,
            selected=Html(" selected") if value == wanted.sort else Html(""),
            label=label,
        )
        for value, label in SORTS.items()
    )
    clear = Html('<a href="/console" class="small">Clear</a>') if wanted.active else Html("")
    return render(
        '<form method="get" action="/console" class="stack" data-queue-filters '
        'role="search" aria-label="Filter the queue">'
        '<label class="block" for="filter-action">Action'
        '<input type="text" id="filter-action" name="action" value="{action}" '
        'maxlength="200" autocomplete="off" spellcheck="false"></label>'
        '<label class="block" for="filter-meta">Metadata (key=value)'
        '<input type="text" id="filter-meta" name="meta" value="{meta}" maxlength="541" '
        'autocomplete="off" spellcheck="false" placeholder="agent=billing"></label>'
        '<label class="block" for="filter-sort">Order'
        '<select id="filter-sort" name="sort">{options}</select></label>'
        '<button type="submit" class="small">Filter</button> {clear}</form>',
        action=wanted.action or "",
        meta="" if wanted.meta is None else f"{wanted.meta[0]}={wanted.meta[1]}",
        options=options,
        clear=clear,
    )


def metadata_links(item: QueuedApproval) -> Html:
    """A request's metadata under it, each entry a link filtering the queue by it."""
    metadata = item.request.metadata or {}
    if not metadata:
        return Html("")
    links = join(
        render(
            '<a href="/console?{query}" class="small">{key}: {value}</a> ',
            query=urlencode({"meta": f"{key}={value}"}),
            key=key,
            value=value,
        )
        for key, value in sorted(metadata.items())
    )
    return render('<p class="small" data-metadata>{links}</p>', links=links)
