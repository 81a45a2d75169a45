"""Attachments of email replies, kept by the service and served as expiring signed links.

A reply's attachments are stored (the provider state table, scope ``email-media``) and
named in its ``mediaUrls`` as ``<public_url>/media/email/<id>?expires=<unix>&signature=…``:
the signature is an HMAC-SHA256 of the id and the expiry under a key the service makes
once and keeps in the database (every replica signs and checks alike, across restarts).
A link past its expiry, or with a signature that does not check, is 404; an attachment
is deleted once its links have expired (at the next start).

``clock`` (``time.time`` unless a test moves it) is the time links are made, checked and
swept by.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ...http.errors import error_response
from .inbound import Attachment

if TYPE_CHECKING:
    from ..port import ProviderState

__all__ = ["MEDIA_PREFIX", "MEDIA_TTL", "EmailMedia"]

MEDIA_PREFIX = "/media/email"
MEDIA_TTL = 7 * 24 * 3600.0
"""How long an attachment's link works (then the attachment is deleted)."""
_SCOPE = "email-media"
_KEY_SCOPE = "email-media-key"
_SAFE_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain"}
)
"""Served as their type; anything else as a download (no HTML run on the service's
origin)."""


class EmailMedia:
    def __init__(
        self,
        store: ProviderState,
        *,
        public_url: str,
        ttl: float = MEDIA_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.public_url = public_url.rstrip("/")
        self.ttl = ttl
        self.clock = clock
        self._key: bytes | None = None

    async def start(self) -> None:
        """Reads (or makes, the first time) the signing key; deletes expired attachments."""
        stored = await self.store.get_provider_state(_KEY_SCOPE, "key")
        if stored is None:
            await self.store.put_provider_state(
                _KEY_SCOPE, "key", {"key": secrets.token_hex(32)}, time.time()
            )
            await self.store.committed()
            stored = await self.store.get_provider_state(_KEY_SCOPE, "key")
        assert stored is not None
        self._key = bytes.fromhex(str(stored["key"]))
        await self.store.delete_provider_state_before(_SCOPE, self.clock() - self.ttl)

    def _signature(self, media_id: str, expires: int) -> str:
        assert self._key is not None, "start() first"
        message = f"{media_id}.{expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def url(self, media_id: str, expires: int) -> str:
        signature = self._signature(media_id, expires)
        return f"{self.public_url}{MEDIA_PREFIX}/{media_id}?expires={expires}&signature={signature}"

    async def keep(
        self, account_id: str, attachments: Sequence[Attachment], now: float
    ) -> tuple[str, ...]:
        """Stores ``attachments``; returns their links."""
        urls: list[str] = []
        expires = int(now + self.ttl)
        for attachment in attachments:
            media_id = secrets.token_urlsafe(16)
            await self.store.put_provider_state(
                _SCOPE,
                media_id,
                {
                    "accountId": account_id,
                    "filename": attachment.filename,
                    "contentType": attachment.content_type,
                    "data": base64.b64encode(attachment.data).decode("ascii"),
                },
                now,
            )
            urls.append(self.url(media_id, expires))
        return tuple(urls)

    def routes(self) -> list[BaseRoute]:
        return [Route(MEDIA_PREFIX + "/{media_id}", self._serve, methods=["GET", "HEAD"])]

    async def _serve(self, request: Request) -> Response:
        missing = error_response(404, "not_found", "no such attachment (or its link expired)")
        media_id = request.path_params["media_id"]
        try:
            expires = int(request.query_params.get("expires", ""))
        except ValueError:
            return missing
        given = request.query_params.get("signature", "")
        if (
            self._key is None
            or expires < self.clock()
            or not hmac.compare_digest(given.encode(), self._signature(media_id, expires).encode())
        ):
            return missing
        stored = await self.store.get_provider_state(_SCOPE, media_id)
        if stored is None:
            return missing
        data = base64.b64decode(str(stored["data"]))
        content_type = str(stored["contentType"])
        disposition = "inline" if content_type in _SAFE_TYPES else "attachment"
        if content_type not in _SAFE_TYPES:
            content_type = "application/octet-stream"
        filename = quote(str(stored["filename"]))
        return Response(
            data,
            media_type=content_type,
            headers={
                "Content-Disposition": f"{disposition}; filename*=UTF-8''{filename}",
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "private, max-age=3600",
            },
        )
