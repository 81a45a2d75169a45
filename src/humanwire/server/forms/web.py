"""HTTP helpers the pages share: HTML responses with the security headers, JSON error
bodies, and reading a browser form post without a multipart dependency."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from humanwire.types import ErrorBody, ErrorDetail

from ..errors import InvalidRequest
from .html import SECURITY_HEADERS, Html

__all__ = ["MAX_FORM_FIELDS", "html_response", "json_error", "read_urlencoded"]

MAX_FORM_FIELDS = 1000


def html_response(
    page: Html, status: int = 200, headers: dict[str, str] | None = None
) -> HTMLResponse:
    return HTMLResponse(str(page), status, headers=dict(SECURITY_HEADERS) | (headers or {}))


def json_error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    body = ErrorBody(error=ErrorDetail(code=code, message=message, field=field))
    return JSONResponse(body.model_dump(mode="json", by_alias=True), status)


async def read_urlencoded(request: Request) -> dict[str, str]:
    """A browser form post (``application/x-www-form-urlencoded``); the first value of
    a repeated name wins. Raises ``InvalidRequest`` for anything else."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in ("application/x-www-form-urlencoded", ""):
        raise InvalidRequest("send the form as application/x-www-form-urlencoded")
    body = await request.body()
    try:
        pairs = parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=False,
            max_num_fields=MAX_FORM_FIELDS,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidRequest(f"unreadable form post: {exc}") from None
    posted: dict[str, str] = {}
    for name, value in pairs:
        posted.setdefault(name, value)
    return posted
