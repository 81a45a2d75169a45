"""The pipeline every API endpoint runs through, declared once per operation so the app
and the OpenAPI document are built from the same table.

Order: refused while the service stops (503) → bearer key → account limits → query
check → body read (size-limited) and full validation → the engine call (through
``engine.idempotency.run`` when the POST carries an ``Idempotency-Key``) → the response
serialized from the wire model.

An operation that names an interaction (``Operation.names``) has it read with the key
(``_named``, ``engine.accounts.authenticate_request``): on PostgreSQL in the key check's own round
trip, not in one more. What is read is used only once the key passed, by the engine call
that checks the interaction is the account's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, TypeAdapter
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from humanwire.types.rules import IDEMPOTENCY_KEY

from ..config import ServiceConfig
from ..engine import HELD_TO_THE_END, Account, Engine, Hold, RateCount, SendContext, wire_json
from ..errors import InvalidRequest, NotFound, ServiceUnavailable, Unauthorized
from ..forms.worker import off_loop
from ..http.middleware import (
    DISCONNECT_EXTENSION,
    DisconnectWatch,
    note_account,
    note_interaction,
    parse_json_body,
)
from ..store.records import InteractionRecord

__all__ = [
    "ApiCall",
    "HeaderParam",
    "Operation",
    "PathParam",
    "Payload",
    "QueryParam",
    "RawJson",
    "check_path",
    "named_in_path",
    "parse_body",
    "query_wait",
    "request_fingerprint",
    "to_routes",
]

M = TypeVar("M", bound=BaseModel)


class RawJson(bytes):
    """A body already written as JSON (``POST /batch`` assembles its items' answers)."""


Payload = (
    BaseModel
    | Sequence[BaseModel]
    | Sequence[dict[str, Any]]
    | dict[str, Any]
    | RawJson
    | Response
    | None
)
Handler = Callable[["ApiCall"], Awaitable[Payload]]
Names = Callable[[Mapping[str, Any], bytes], "str | None"]
"""The interaction a request names, from its path parameters and its body's bytes."""

IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
_MAX_API_KEY_LENGTH = 512
READ_AHEAD_BODY = 16 * 1024
"""The largest body read ahead of its key check (bytes)."""


@dataclass(frozen=True)
class QueryParam:
    name: str
    description: str
    schema: dict[str, Any]
    deep_object: bool = False
    """An object sent as ``name[key]=value`` parameters (OpenAPI's ``deepObject``)."""


HeaderParam = QueryParam
"""A request header an operation reads: the same three things, sent as a header."""


@dataclass(frozen=True)
class PathParam:
    name: str
    description: str
    pattern: str | None = None
    """A value not matching it is an unknown resource (404) before the body is read."""


@dataclass(frozen=True)
class Operation:
    """One endpoint: what it takes, what it returns, and the handler that does it."""

    method: Literal["GET", "POST", "PATCH", "DELETE"]
    path: str
    handler: Handler
    operation_id: str
    summary: str
    tag: str
    status: int = 200
    body: TypeAdapter[Any] | None = None
    response: TypeAdapter[Any] | None = None
    """``None``: no body (204)."""
    query: tuple[QueryParam, ...] = ()
    headers: tuple[HeaderParam, ...] = ()
    """Headers beside the common ones (``Idempotency-Key`` and ``Prefer`` on a POST)."""
    auth: bool = True
    errors: tuple[int, ...] = ()
    """Statuses this operation adds to the common ones (400, 401, 403, 429)."""
    description: str = ""
    path_params: tuple[PathParam, ...] = ()
    stream: bool = False
    """The handler returns its own ``Response`` (server-sent events)."""
    batchable: bool = False
    """A send ``POST /batch`` may carry (messages and forms)."""
    body_off_loop: bool = False
    """Its body is validated on the new forms' worker thread: a form's patterns are
    parsed and compiled (RE2) as it is checked."""
    unavailable_body: TypeAdapter[Any] | None = None
    """The body of the operation's own 503: it runs while the service stops too, and
    its handler returns its own ``Response`` (``/readyz``)."""
    names: Names | None = None
    """The interaction the request names, read with its key (``ApiCall.named``)."""


@dataclass(slots=True)
class ApiCall:
    """What a handler gets: the validated body, the path and query, the account, and
    what a send passes on to the engine (``send``: is its client still there, does it
    take a 202, the ``Idempotency-Key`` run it belongs to)."""

    request: Request
    engine: Engine
    config: ServiceConfig
    body: Any
    caller: Account | None
    send: SendContext = HELD_TO_THE_END
    named: InteractionRecord | None = None
    """The interaction the request names (``Operation.names``), read with its key; not
    checked against the account (the engine call it is passed to checks it). None when
    not read or not found: the engine call then reads it itself."""

    @property
    def account(self) -> Account:
        if self.caller is None:  # only the key-less operations lack one
            raise Unauthorized("this endpoint needs the API key")
        return self.caller

    @property
    def query(self) -> QueryParams:
        return self.request.query_params

    def path(self, name: str) -> str:
        value = self.request.path_params[name]
        assert isinstance(value, str)
        return value

    def body_as(self, model: type[M]) -> M:
        assert isinstance(self.body, model)
        return self.body


def query_wait(call: ApiCall, name: str = "wait") -> float | None:
    """Seconds to hold a long-poll, from the query: 0 (look once, hold nothing) up to
    ``config.max_status_wait``."""
    text = call.query.get(name)
    if text is None:
        return None
    high = call.config.max_status_wait
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 <= value <= high):  # also false for nan
        raise InvalidRequest(f"{name} must be a number of seconds from 0 to {high:g}", field=name)
    return value


async def authenticate(request: Request, engine: Engine) -> Account:
    """The account of the request's key; ``Unauthorized`` without a valid one. Public (as
    ``humanwire.server.routes.authenticate``): ``/mcp`` checks its requests with it."""
    account = await engine.accounts.authenticate(_api_key(request))
    if account is None:
        raise Unauthorized("invalid API key")
    return account


async def _authenticate_counted(
    engine: Engine, api_key: str, named: str | None
) -> tuple[Account, RateCount | None, InteractionRecord | None]:
    """``authenticate`` for an API request, counted against the rate limit on the way
    where the store can, and the interaction ``named`` read with it
    (``engine.accounts.authenticate_request``)."""
    account, counted, interaction = await engine.accounts.authenticate_request(api_key, named)
    if account is None:
        raise Unauthorized("invalid API key")
    return account, counted, interaction


def _api_key(request: Request) -> str:
    header = request.headers.get("authorization")
    if header is None:
        raise Unauthorized("missing API key: send the header Authorization: Bearer <API_KEY>")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("the Authorization header must be: Bearer <API_KEY>")
    if len(token) > _MAX_API_KEY_LENGTH:
        raise Unauthorized("invalid API key")
    return token


def check_path(request: Request, params: tuple[PathParam, ...]) -> None:
    for param in params:
        value = request.path_params.get(param.name, "")
        # No id holds a NUL, and PostgreSQL's text cannot be compared with one (an error).
        if "\x00" in value or (
            param.pattern is not None and not re.fullmatch(param.pattern, value)
        ):
            raise NotFound(f"no such {param.name.removesuffix('_id')}: {value!r}")


def _check_query(request: Request, allowed: tuple[QueryParam, ...]) -> None:
    names = {param.name for param in allowed if not param.deep_object}
    objects = tuple(f"{param.name}[" for param in allowed if param.deep_object)
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name not in names and not (name.startswith(objects) and name.endswith("]")):
            raise InvalidRequest(f"unknown query parameter {name!r}", field=name)
        if name in seen:
            raise InvalidRequest(f"query parameter {name!r} given twice", field=name)
        seen.add(name)


def _idempotency_key(request: Request) -> str | None:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not IDEMPOTENCY_KEY.fullmatch(key):
        raise InvalidRequest(
            "Idempotency-Key must be 1 to 255 printable ASCII characters",
            field=IDEMPOTENCY_HEADER,
        )
    return key


def request_fingerprint(method: str, path: str, raw: bytes) -> str:
    """What an idempotency key is bound to: method, path and the body's bytes."""
    return f"{method} {path} {hashlib.sha256(raw).hexdigest()}"


def _wire(item: Any) -> Any:
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json", by_alias=True, exclude_none=True)
    return item


def encode(payload: Payload) -> bytes:
    """A model as ``to_wire()`` writes it (by alias, ``None`` left out)."""
    if payload is None:
        return b""
    if isinstance(payload, RawJson):
        return bytes(payload)
    if isinstance(payload, (list, tuple)):
        data: Any = [_wire(item) for item in payload]
    else:
        data = _wire(payload)
    return wire_json(data)


def _respond(status: int, content: bytes, replayed: bool) -> Response:
    headers = {REPLAYED_HEADER: "true"} if replayed else None
    if status == 204 or not content:
        return Response(status_code=status, headers=headers)
    return Response(content, status, headers=headers, media_type="application/json")


async def _watch_disconnect(receive: Receive, gone: asyncio.Future[None]) -> None:
    """Settles ``gone`` when the client closes the connection (read after the body, so
    the only message left is ``http.disconnect``)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not gone.done():
                gone.set_result(None)
            return


async def parse_body(raw: bytes, content_type: str | None, operation: Operation) -> Any:
    """``parse_json_body`` with the operation's model, on a worker thread when it says so."""
    assert operation.body is not None
    if operation.body_off_loop:
        return await off_loop("new forms", parse_json_body, raw, content_type, operation.body)
    return parse_json_body(raw, content_type, operation.body)


def _pipeline(operations: Mapping[str, Operation]) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of one path, for each of its methods. One coroutine per request, no
    more: a held send keeps this frame alive (and the engine's), no dispatcher's frame,
    no closure (``_run_keyed`` has the one a key needs)."""

    async def endpoint(request: Request) -> Response:
        # HEAD is answered as GET (Starlette sends no body for it).
        operation = operations["GET" if request.method == "HEAD" else request.method]
        engine: Engine = request.app.state.engine
        config: ServiceConfig = request.app.state.config
        if engine.runtime.lifecycle.draining and operation.unavailable_body is None:
            # Stopping (also /healthz: not ready, so nothing new is routed here).
            raise ServiceUnavailable(retry_after=config.unavailable_retry_after)
        account: Account | None = None
        read: InteractionRecord | None = None
        if operation.auth:
            api_key = _api_key(request)
            account, counted, read = await _authenticate_counted(
                engine, api_key, await _named(operation, request)
            )
            note_account(account.id)
            await engine.accounts.check_limits(account, counted)
        check_path(request, operation.path_params)
        named = request.path_params.get("interactionId")
        if named is not None:
            note_interaction(named)
        if request.scope.get("query_string"):  # none: no QueryParams kept by the request
            _check_query(request, operation.query)
        key = _idempotency_key(request) if operation.method == "POST" else None
        raw = b""
        body: Any = None
        if operation.body is not None:
            raw = await request.body()  # read already when read ahead (kept by the request)
            body = await parse_body(raw, request.headers.get("content-type"), operation)
        call = ApiCall(
            request=request, engine=engine, config=config, body=body, caller=account, named=read
        )
        watcher: asyncio.Task[None] | None = None
        respond_async = (
            operation.method == "POST"
            and operation.body is not None
            and account is not None
            and _prefers_respond_async(request)
        )
        if respond_async:
            # The hold outlives this request: no disconnect watch (a 202 closes it anyway).
            assert account is not None
            return await _accept_async(engine, account, key, request, raw, operation, call)
        if operation.method == "POST" and operation.body is not None:
            # A send may be held: the engine lets go of it once its client is gone.
            gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            connection: DisconnectWatch | None = request.scope.get("extensions", {}).get(
                DISCONNECT_EXTENSION
            )
            if connection is not None:
                connection.settle_on_disconnect(gone)  # the service's own protocol tells
            else:
                watcher = asyncio.ensure_future(_watch_disconnect(request.receive, gone))
            call.send = SendContext(gone=gone)

        if operation.stream or operation.unavailable_body is not None:
            # Read (and size-check) any body now: the stream listens for the client's
            # disconnect on the same channel, where a late 413 could no longer be sent.
            await request.body()
            streamed = await operation.handler(call)
            assert isinstance(streamed, Response)
            return streamed
        try:
            if key is None or account is None:
                payload = await operation.handler(call)
                return _respond(operation.status, encode(payload), replayed=False)
            fingerprint = request_fingerprint(request.method, request.url.path, raw)
            status, content, ran = await _run_keyed(
                engine, account, key, fingerprint, operation, call
            )
        finally:
            if watcher is not None:
                watcher.cancel()
        return _respond(status, content, replayed=not ran)

    return endpoint


async def _run_keyed(
    engine: Engine,
    account: Account,
    key: str,
    fingerprint: str,
    operation: Operation,
    call: ApiCall,
) -> tuple[int, bytes, bool]:
    """The operation run under its ``Idempotency-Key`` (``engine.idempotency.run``):
    status, body, and whether it ran here (False: the key's stored answer, replayed)."""
    ran = False

    async def run(context: SendContext) -> tuple[int, bytes]:
        nonlocal ran
        ran = True
        return operation.status, encode(await operation.handler(_with(call, context)))

    status, content = await engine.idempotency.run(account, key, fingerprint, run, call.send)
    return status, content, ran


async def _named(operation: Operation, request: Request) -> str | None:
    """The interaction the request names (``Operation.names``), read with its key. Its
    body, when the name is in it, is read first (a small one only: nothing is parsed for
    a caller not yet known past ``READ_AHEAD_BODY`` bytes), so its key is checked once
    that body is in (a request without a key is refused before); an error reading it is
    raised where the body is read again, once the key passed. None: no name, or none that
    could be an interaction's (the engine call reads and answers as without it)."""
    if operation.names is None:
        return None
    raw = b""
    if operation.body is not None:
        length = request.headers.get("content-length", "")
        if not length.isdigit() or int(length) > READ_AHEAD_BODY:
            return None
        try:
            raw = await request.body()  # kept by the request for the handler
        except Exception:
            return None
    name = operation.names(request.path_params, raw)
    if not name or len(name) > 200 or not name.isprintable():  # NUL, lone surrogates
        return None
    return name


def named_in_path(params: Mapping[str, Any], raw: bytes) -> str | None:
    """``Operation.names`` for an operation whose path names it (``{interactionId}``)."""
    value = params.get("interactionId")
    return value if isinstance(value, str) else None


def _with(call: ApiCall, context: SendContext) -> ApiCall:
    """``call`` with the context its send is made with (an idempotent run's own)."""
    return call if context is call.send else dataclasses.replace(call, send=context)


def _prefers_respond_async(request: Request) -> bool:
    """``Prefer: respond-async`` (RFC 7240; other preferences beside it are ignored)."""
    for header in request.headers.getlist("prefer"):
        for preference in header.split(","):
            if preference.split(";")[0].strip().lower() == "respond-async":
                return True
    return False


async def _accept_async(
    engine: Engine,
    account: Account,
    key: str | None,
    request: Request,
    raw: bytes,
    operation: Operation,
    call: ApiCall,
) -> Response:
    """A send with ``Prefer: respond-async``: run as usual; once it starts to hold (it was
    delivered and waits), answer 202 with the no-wait body and let the hold go on; its
    answer becomes the account's ``wait.ended`` event. A send that does not hold (no
    wait, an error, a replayed key) answers as it would have."""
    fingerprint = request_fingerprint(request.method, request.url.path, raw)
    status, content, headers = await run_respond_async(
        engine, account, key, fingerprint, operation, call
    )
    if status == 204 or not content:
        return Response(status_code=status, headers=headers or None)
    return Response(content, status, headers=headers or None, media_type="application/json")


async def run_respond_async(
    engine: Engine,
    account: Account,
    key: str | None,
    fingerprint: str,
    operation: Operation,
    call: ApiCall,
) -> tuple[int, bytes, dict[str, str]]:
    """``_accept_async``'s work, as status, body and the headers that matter (a batch
    item's answer is this, not a ``Response``)."""
    ran = False
    # Settled by the engine once the send holds (its hold), or None when the send ended
    # first. No requester-gone future: the hold outlives the request (a 202 ends it).
    accepted: asyncio.Future[Hold | None] = asyncio.get_running_loop().create_future()
    context = SendContext(accept=accepted)

    async def run(given: SendContext) -> tuple[int, bytes]:
        nonlocal ran
        ran = True
        return operation.status, encode(await operation.handler(_with(call, given)))

    # The task's own coroutine is the run's, no wrapper: it lives as long as the hold.
    task = asyncio.ensure_future(
        run(context)
        if key is None
        else engine.idempotency.run(account, key, fingerprint, run, context)
    )

    # One future to await, no ``asyncio.wait`` per send.
    def ended(_: asyncio.Future[Any]) -> None:
        if not accepted.done():
            accepted.set_result(None)

    task.add_done_callback(ended)
    hold = await accepted
    if hold is None or (task.done() and not task.cancelled()):
        status, content = await task
        return status, content, ({REPLAYED_HEADER: "true"} if not ran else {})
    task.remove_done_callback(ended)  # accepted: not kept for as long as the hold lasts
    engine.respond_async.follow_async(hold, task)
    body = await engine.respond_async.accepted_body(hold)
    content = wire_json(body)
    return 202, content, {"Preference-Applied": "respond-async"}


class _Endpoint:
    """The ASGI app of one path's route: the pipeline's response to the request.

    An ASGI app, not a function endpoint, so Starlette's route does not wrap it in
    ``request_response`` and a second exception-handling layer (three coroutines and
    their closures a request, kept alive by a held one): an error raised here reaches
    the app's ``ExceptionMiddleware``, which answers it with the same handlers."""

    __slots__ = ("_pipeline",)

    def __init__(self, pipeline: Callable[[Request], Awaitable[Response]]) -> None:
        self._pipeline = pipeline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self._pipeline(Request(scope, receive, send))
        await response(scope, receive, send)


def to_routes(operations: Sequence[Operation]) -> list[Route]:
    """One route per path, so a wrong method is a 405 whose ``Allow`` lists every method
    of the path; paths keep the order of the table (fixed before parameterized)."""
    by_path: dict[str, dict[str, Operation]] = {}
    for operation in operations:
        by_path.setdefault(operation.path, {})[operation.method] = operation
    return [
        Route(path, _Endpoint(_pipeline(by_method)), methods=list(by_method))
        for path, by_method in by_path.items()
    ]
