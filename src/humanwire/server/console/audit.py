"""The console's audit trail: ``/console/audit`` (the entries a signed-in person may see,
filtered, a page at a time, with the check of the account's whole chain) and its
downloads, ``/console/audit/export.jsonl`` and ``/console/audit/export.csv`` (the same
entries, every one the filter matches, oldest first). What a person may see, and the
check: ``engine.audit_trail``. A filter that cannot be read is a 400 page naming it; a
request (or grant) the person is not part of, as a filter, is a 404, as on every console
route. ``audit_routes`` gives the routes, behind ``ConsolePages``' sign-in guard."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..engine.audit_trail import MAX_EXPORT, AuditFilter, AuditTrail
from ..forms.html import SECURITY_HEADERS
from ..forms.web import html_response
from .audit_pages import EVENTS, FIELDS, render_audit_page
from .auth import Signed
from .guards import Guards
from .pages import render_problem_page

__all__ = ["FilterError", "audit_routes", "read_filter"]

_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MAX_SEQUENCE = 2**62
PAGE = 50
"""Entries one page shows."""
CSV_COLUMNS = (
    "sequence",
    "at",
    "type",
    "interactionId",
    "actorPerson",
    "actorChannel",
    "actorTo",
    "via",
    "data",
    "prev",
    "hash",
)


class FilterError(Exception):
    """A filter that cannot be read: its sentence names the field."""


def _time(name: str, text: str) -> float:
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise FilterError(
            f"{name}: {text[:40]!r} is not a date and time (2026-12-04T18:30, in UTC)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def read_filter(params: Mapping[str, str]) -> tuple[AuditFilter, int | None, dict[str, str]]:
    """The filter, the page's cursor and the values to show in the form again (each
    trimmed); ``FilterError`` for one that cannot be read."""
    values = {name: params.get(name, "").strip() for name, *_ in FIELDS}
    values |= {name: params.get(name, "").strip() for name in ("event", "after", "before")}
    older_text = params.get("older", "").strip()
    for name, label, _kind, size in FIELDS:
        if len(values[name]) > size:
            raise FilterError(f"{label}: at most {size} characters")
        if _CONTROL.search(values[name]):
            raise FilterError(f"{label}: no control characters")
    approval = values["approval"] or None
    if approval is not None and not _ID.fullmatch(approval):
        raise FilterError(
            "Approval: an interaction id has only letters, digits, '_' and '-' "
            f"(not {approval[:40]!r})"
        )
    event = values["event"] or None
    if event is not None and event not in EVENTS:
        raise FilterError(f"Event: {event[:60]!r} is not an event of the audit log")
    since = _time("After", values["after"]) if values["after"] else None
    until = _time("Before", values["before"]) if values["before"] else None
    if since is not None and until is not None and until <= since:
        raise FilterError("Before must be later than After")
    older = None
    if older_text:
        if not older_text.isdigit() or not 1 <= int(older_text) <= _MAX_SEQUENCE:
            raise FilterError("older: a page's cursor is an entry's sequence number")
        older = int(older_text)
    wanted = AuditFilter(
        interaction_id=approval,
        person=values["person"] or None,
        event=event,
        action_name=values["action"] or None,
        since=since,
        until=until,
    )
    if older is not None:
        values["older"] = str(older)
    return wanted, older, values


def _csv_cell(value: Any) -> str:
    text = "" if value is None else value if isinstance(value, str) else json.dumps(value)
    # A spreadsheet runs a cell that starts like a formula: never one of ours.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv(entries: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for entry in entries:
        actor = entry.get("actor") or {}
        data = entry.get("data") or {}
        writer.writerow(
            _csv_cell(value)
            for value in (
                str(entry.get("sequence")),
                entry.get("at"),
                entry.get("type"),
                entry.get("interactionId"),
                actor.get("person"),
                actor.get("channel"),
                actor.get("to"),
                data.get("via"),
                json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")),
                entry.get("prev"),
                entry.get("hash"),
            )
        )
    return out.getvalue()


class AuditPages:
    def __init__(self, pages: Guards) -> None:
        signing = pages.engine.audit_checkpoints
        public_key = None if signing is None else signing.signer.public_key
        self.trail = AuditTrail(pages.engine.store, public_key)

    async def _read(
        self, request: Request, signed: Signed
    ) -> tuple[AuditFilter, int | None, dict[str, str]] | Response:
        try:
            wanted, older, values = read_filter(request.query_params)
        except FilterError as exc:
            shown = {k: v[:320] for k, v in request.query_params.items()}
            page = render_audit_page(signed, shown, None, error=str(exc))
            return html_response(page, 400)
        person = signed.person
        if wanted.interaction_id is not None and not await self.trail.is_theirs(
            person.account, person.person_id, wanted.interaction_id
        ):
            page = render_problem_page(
                "Not found", "There is no approval request of yours with that id."
            )
            return html_response(page, 404)
        return wanted, older, values

    async def page(self, request: Request, signed: Signed) -> Response:
        read = await self._read(request, signed)
        if isinstance(read, Response):
            return read
        wanted, older, values = read
        person = signed.person
        found = await self.trail.page(person.account, person.person_id, wanted, older, PAGE)
        names = await self.trail.names(
            person.account,
            (
                str(e["actor"]["person"])
                for e in found.entries
                if isinstance(e.get("actor"), dict) and e["actor"].get("person")
            ),
        )
        check = await self.trail.check(person.account)
        page = render_audit_page(signed, values, check, found.entries, found.older, names)
        return html_response(page)

    async def export(self, request: Request, signed: Signed) -> Response:
        form = request.path_params["form"]
        if form not in ("jsonl", "csv"):
            page = render_problem_page("Not found", "Downloads are export.jsonl and export.csv.")
            return html_response(page, 404)
        read = await self._read(request, signed)
        if isinstance(read, Response):
            return read
        wanted, _older, _values = read
        person = signed.person
        entries = await self.trail.export(person.account, person.person_id, wanted)
        if entries is None:
            page = render_problem_page(
                "Too many entries",
                f"More than {MAX_EXPORT} entries match: narrow the filter (a time range).",
            )
            return html_response(page, 400)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        if form == "csv":
            body, media = _csv(entries), "text/csv; charset=utf-8"
        else:
            body = "".join(
                json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in entries
            )
            media = "application/x-ndjson; charset=utf-8"
        headers = dict(SECURITY_HEADERS) | {
            "Content-Disposition": f'attachment; filename="humanwire-audit-{stamp}.{form}"'
        }
        return Response(body, 200, headers=headers, media_type=media)


def audit_routes(pages: Guards) -> list[BaseRoute]:
    audit = AuditPages(pages)
    return [
        Route("/console/audit", pages.page(audit.page), methods=["GET"]),
        Route(
            "/console/audit/export.{form:str}",
            pages.page(audit.export),
            methods=["GET"],
        ),
    ]
