"""The routes providers call (Slack's events and clicks, Twilio's texts, statuses and call
turns), guarded in one place.

Such a route carries no bearer key: the request is trusted only once its signature
checks out. ``signed_route`` runs every request through three steps, and the handler
only ever sees a request that passed the first two:

1. ``verifier.verify(request, body)``: anything it cannot verify (no signature, a
   timestamp that is not a number, a signature that is not ASCII, a body that is not
   UTF-8, a wrong secret) is **403** ``forbidden`` (**401** ``unauthorized`` for a
   provider that requires it: Discord checks its endpoint answers a bad signature 401);
2. ``parse(request, body)``: a verified body it cannot read (not JSON, nested too
   deeply, the wrong shape) is **400** ``invalid_request``, with ``field`` when one is
   to blame; it must check everything the handler and its background work rely on;
3. with ``replays`` (a provider whose signature carries a timestamp: Slack, Telnyx), what
   the signature covered is claimed once (``ReplayGuard``): the same signed content again,
   at any path or query of the route, is **403** ``forbidden``, however it is spelled;
4. the handler.

Steps 1 to 3 never answer 500, whatever a verifier or parser raises: the refusal is one
log line, no traceback (INFO; WARNING when they raised something else than ``Unverified``
or ``Malformed``, which is theirs to fix), so requests without a signature cannot fill
the log. A provider added later gets this by building its routes with ``signed_route``
(``tests/providers/test_provider_route_sweep.py`` fails for a route under
``/providers/`` built otherwise).

A WebSocket a provider opens (the relay of real-time calls) is built with
``signed_websocket_route``: its handshake is verified the same way (``SocketVerifier``),
then admitted by the route (``admit``: the relay takes one socket per call), and refused
with 403 before the socket is accepted; the sweep refuses any other.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import parse_qsl

from pydantic_core import from_json
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketState

from ..http.errors import error_response

if TYPE_CHECKING:
    from .port import ProviderState

__all__ = [
    "Malformed",
    "ProviderRoute",
    "ProviderWebSocketRoute",
    "RelaySockets",
    "ReplayGuard",
    "SocketVerifier",
    "Unverified",
    "Verifier",
    "form_params",
    "json_value",
    "not_found",
    "relay_route",
    "signed_route",
    "signed_websocket_route",
    "socket_url",
    "without_nul",
]

T = TypeVar("T")

logger = logging.getLogger("humanwire.providers")


class Unverified(Exception):
    """The request cannot be verified as the provider's: 403, nothing done."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Malformed(Exception):
    """The request is the provider's but its body cannot be read: 400, nothing done."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class Verifier(Protocol):
    """Checks a provider's signature over the raw request."""

    header: str
    """The header the signature travels in, named in the 403's message."""

    def verify(self, request: Request, body: bytes) -> None:
        """Returns when ``body`` (with ``request``'s headers and URL) is the provider's;
        raises ``Unverified`` otherwise (anything else it raises is taken as such)."""
        ...


class ReplayGuard:
    """The signed requests a provider's routes acted on, for a provider whose signature
    covers a timestamp and the body but not the URL (Slack, Telnyx): within the
    timestamp's tolerance a captured request could otherwise be sent again, to the same
    URL or to another query of the route. ``covered(request, body)`` is what the
    signature covers (the verifier's rule); a request is keyed on its route and the
    SHA-256 of that, never on the URL or on the signature's spelling (base64's padding
    bits, say, give one signature several spellings).

    ``vouched(request)``, given, is what of the URL the service itself signed (Telnyx's
    call URLs carry its token of the interaction and the turn), or None: the same body
    at two URLs the service signed is two requests (two turns of a call may send the
    same body in one second), and a request at a URL it did not sign is refused once the
    body was taken at any.

    Kept in the store (``provider_state`` under ``scope``: every replica, PostgreSQL's
    too, sees one set) for twice the tolerance, past which the timestamp refuses the
    request anyway. A key is claimed in one statement before the handler runs, so two
    copies arriving at once are taken once; it is given back when the handler fails
    (an answer of 400 or more, or an exception), so the provider's redelivery of a
    request the service did not take is still taken."""

    def __init__(
        self,
        store: ProviderState,
        *,
        scope: str,
        tolerance: float,
        covered: Callable[[Request, bytes], bytes],
        vouched: Callable[[Request], str | None] | None = None,
    ) -> None:
        self._store = store
        self._scope = scope
        self._keep = 2 * tolerance
        self._covered = covered
        self._vouched = vouched

    async def claim(self, route: str, request: Request, body: bytes) -> str | None:
        """The key this request is taken under, or None: a replay."""
        content = f"{route} {hashlib.sha256(self._covered(request, body)).hexdigest()}"
        own = self._vouched(request) if self._vouched is not None else None
        key = content if own is None else f"{content} {own}"
        now = time.time()
        if not await self._store.claim_provider_state(self._scope, key, {"at": now}, now):
            return None
        if own is not None:  # the same content at a URL the service did not sign: a replay
            await self._store.put_provider_state(self._scope, content, {"at": now}, now)
        await self._store.delete_provider_state_before(self._scope, now - self._keep)
        return key

    async def release(self, key: str) -> None:
        await self._store.delete_provider_state(self._scope, key)


class ProviderRoute(Route):
    """A route a provider (or, for an install, an admin's browser) calls, with no bearer
    key. ``verifier`` is None for a page a browser opens."""

    def __init__(
        self,
        path: str,
        endpoint: Callable[[Request], Awaitable[Response]],
        *,
        provider: str,
        methods: Sequence[str],
        verifier: Verifier | None = None,
    ) -> None:
        super().__init__(path, endpoint, methods=list(methods))
        self.provider = provider
        self.verifier = verifier


def signed_route(
    path: str,
    handler: Callable[[Request, T], Awaitable[Response]],
    *,
    provider: str,
    verifier: Verifier,
    parse: Callable[[Request, bytes], T],
    methods: Sequence[str] = ("POST",),
    replays: ReplayGuard | None = None,
    unverified_status: int = 403,
) -> ProviderRoute:
    """``path`` answering with ``handler(request, parse(request, body))`` once
    ``verifier`` has verified the request, and ``replays`` has not seen it (the module's
    steps). ``unverified_status``: 403 (``forbidden``), or 401 (``unauthorized``) where
    the provider requires it."""
    unverified_code = "unauthorized" if unverified_status == 401 else "forbidden"

    def refused(status: int, why: str, choked: Exception | None = None) -> None:
        # One line, no traceback: an unsigned request costs the log this much at most.
        # A verifier or parser that raised rather than refused is a WARNING (it should
        # refuse that input itself; the sweep test allows no warning).
        detail = f" ({type(choked).__name__}: {str(choked)[:200]})" if choked else ""
        level = logging.WARNING if choked else logging.INFO
        logger.log(level, "%s %s refused (%d): %s%s", provider, path, status, why, detail)

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        try:
            verifier.verify(request, body)
        except Unverified as exc:
            refused(unverified_status, exc.message)
            return error_response(unverified_status, unverified_code, exc.message)
        except Exception as exc:  # a verifier that chokes on garbage has not verified it
            forbidden = f"missing or invalid {verifier.header}"
            refused(unverified_status, forbidden, exc)
            return error_response(unverified_status, unverified_code, forbidden)
        try:
            parsed = parse(request, body)
        except Malformed as exc:
            refused(400, exc.message)
            return error_response(400, "invalid_request", exc.message, exc.field)
        except Exception as exc:  # a parser that chokes has not parsed it
            refused(400, "the body could not be read", exc)
            return error_response(400, "invalid_request", "the body could not be read")
        if replays is None:
            return await handler(request, parsed)
        key = await replays.claim(path, request, body)
        if key is None:
            refused(403, "a replay")
            return error_response(
                403, "forbidden", "this signed request was already received (a replay)"
            )
        try:
            response = await handler(request, parsed)
        except Exception:
            await replays.release(key)
            raise
        if response.status_code >= 400:
            await replays.release(key)
        return response

    return ProviderRoute(path, endpoint, provider=provider, methods=methods, verifier=verifier)


class SocketVerifier(Protocol):
    """Checks a provider's signature over a WebSocket handshake (no body)."""

    header: str

    def verify_handshake(self, connection: HTTPConnection) -> None:
        """Returns when the handshake is the provider's; raises ``Unverified``
        otherwise (anything else it raises is taken as such)."""
        ...


class ProviderWebSocketRoute(WebSocketRoute):
    """A WebSocket a provider opens (the relay of real-time calls), its handshake
    verified by ``verifier`` before it is accepted."""

    def __init__(
        self,
        path: str,
        endpoint: Callable[[WebSocket], Awaitable[None]],
        *,
        provider: str,
        verifier: SocketVerifier,
    ) -> None:
        super().__init__(path, endpoint)
        self.provider = provider
        self.verifier = verifier


Frames = Callable[[], Awaitable[str | None]]
SendJSON = Callable[[dict[str, Any]], Awaitable[None]]


def signed_websocket_route(
    path: str,
    handler: Callable[[WebSocket, Frames, SendJSON], Awaitable[None]],
    *,
    provider: str,
    verifier: SocketVerifier,
    admit: Callable[[HTTPConnection], Awaitable[str | None]] | None = None,
) -> ProviderWebSocketRoute:
    """``path`` running ``handler(websocket, receive, send)`` once ``verifier`` has
    verified the handshake and ``admit`` (given) answered None rather than why not;
    otherwise the socket is closed before it is accepted, which the client sees as
    **403** (one log line, as ``signed_route``'s refusals).
    ``receive`` gives the next text frame (a binary frame as ``""``; None once the
    socket closed), ``send`` writes one JSON object. However the handler ends, the
    socket is closed."""

    async def endpoint(websocket: WebSocket) -> None:
        try:
            verifier.verify_handshake(websocket)
        except Exception as exc:
            why = (
                exc.message
                if isinstance(exc, Unverified)
                else f"missing or invalid {verifier.header}"
            )
            level = logging.INFO if isinstance(exc, Unverified) else logging.WARNING
            logger.log(level, "%s %s refused (403): %s", provider, path, why)
            await websocket.close(code=1008)
            return
        refusal = await admit(websocket) if admit is not None else None
        if refusal is not None:
            logger.info("%s %s refused (403): %s", provider, path, refusal)
            await websocket.close(code=1008)
            return
        await websocket.accept()

        async def receive() -> str | None:
            if websocket.client_state != WebSocketState.CONNECTED:
                return None
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return None
            text = message.get("text")
            return text if isinstance(text, str) else ""

        async def send(value: dict[str, Any]) -> None:
            await websocket.send_text(json.dumps(value, separators=(",", ":")))

        try:
            await handler(websocket, receive, send)
        finally:
            if websocket.application_state == WebSocketState.CONNECTED:
                with contextlib.suppress(Exception):  # already gone: nothing to close
                    await websocket.close()

    return ProviderWebSocketRoute(path, endpoint, provider=provider, verifier=verifier)


class RelaySockets(Protocol):
    """A carrier's calls, as the relay socket's route sees them (``CallTurns``)."""

    async def take_relay(self, interaction_id: str) -> str | None:
        """None when a socket for the call may be accepted; otherwise why not."""
        ...

    async def run_relay(self, interaction_id: str, receive: Frames, send: SendJSON) -> None:
        """The call's session on an accepted socket."""
        ...


def relay_route(
    path: str, calls: RelaySockets, *, provider: str, verifier: SocketVerifier
) -> ProviderWebSocketRoute:
    """The relay socket of real-time calls at ``path``: its URL names the call's
    interaction (``?interaction=``, which ``verifier``'s check covers), and the call takes
    one socket (``calls.take_relay``, before the socket is accepted)."""

    def named(connection: HTTPConnection) -> str:
        return connection.query_params.get("interaction", "")

    async def run(websocket: WebSocket, receive: Frames, send: SendJSON) -> None:
        await calls.run_relay(named(websocket), receive, send)

    async def admit(connection: HTTPConnection) -> str | None:
        return await calls.take_relay(named(connection))

    return signed_websocket_route(path, run, provider=provider, verifier=verifier, admit=admit)


def socket_url(public_url: str) -> str:
    """``public_url`` as the WebSocket scheme says it: ``https`` → ``wss``, ``http`` →
    ``ws``."""
    if public_url.startswith("https://"):
        return "wss://" + public_url.removeprefix("https://")
    if public_url.startswith("http://"):
        return "ws://" + public_url.removeprefix("http://")
    return public_url


# -- parsing helpers ---------------------------------------------------------------------
def not_found(message: str) -> Response:
    """A verified request for something the route no longer has (an own bot deleted):
    404 in the API's error body."""
    return error_response(404, "not_found", message)


def json_value(raw: bytes | str) -> Any:
    """A JSON document, or ``Malformed``. pydantic's parser bounds the nesting (the
    standard library's would raise ``RecursionError``)."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed("the body is not UTF-8") from None
    try:
        value = from_json(raw)
    except ValueError as exc:
        raise Malformed(f"the body is not JSON: {str(exc)[:200]}") from None
    # Only JSON's escape can carry a NUL (a raw one is not JSON): only then walk it.
    return without_nul(value) if "\\u0000" in raw else value


def form_params(raw: bytes) -> dict[str, str]:
    """A form-encoded body as its fields (the last of a repeated name), or ``Malformed``
    when it is not UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed("the body is not UTF-8") from None
    return dict(parse_qsl(text, keep_blank_values=True))


def without_nul(value: Any) -> Any:
    """``value`` with NUL characters dropped from every string (keys too): no carrier
    delivers one, PostgreSQL's text cannot store one, and refusing a provider's
    callback would only have it retried."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, Mapping):
        return {without_nul(key): without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_nul(item) for item in value]
    return value
