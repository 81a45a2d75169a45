"""``POST /batch``: many sends in one request.

Each item is one send (``/messages/…`` or ``/forms/…``) run exactly as if it had come
alone with ``Prefer: respond-async`` and its own ``Idempotency-Key``: the account's rate
limit counts it, its operation's model validates its body, and its entry in ``responses``
(same order) is what it would have answered — 202 with the no-wait body once it holds
(the answer comes on the outcome stream as ``wait.ended``), its answer when it does not
hold, or its error in the usual shape. The items run concurrently; the batch answers when
each has been accepted or has ended.

An item's idempotency fingerprint is its path and its body written compactly
(``json.dumps(body, separators=(",", ":"), ensure_ascii=False)``): the bytes the Python
client sends for the same send alone, so a retry may go either way under one key.

Why: a client with thousands of waits in flight spends most of its CPU (and the
service much of its own) on one HTTP exchange per send; a batch costs one.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence

from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import compile_path

from humanwire.types import BatchItem, BatchRequest, BatchResponse
from humanwire.types.rules import IDEMPOTENCY_KEY

from ..errors import InvalidRequest, NotFound, ServiceError
from ..http.errors import error_response, service_error_response, store_unavailable_response
from ..store.commits import TOUCHED, StoreUnavailable, Touched
from ._api import (
    ApiCall,
    Operation,
    Payload,
    RawJson,
    check_path,
    parse_body,
    request_fingerprint,
    run_respond_async,
)

__all__ = ["operations"]

logger = logging.getLogger("humanwire.server")

# Headers of an item's answer worth passing on (the rest describe the HTTP exchange).
_KEPT_HEADERS = ("retry-after", "preference-applied", "idempotent-replayed", "www-authenticate")


class _Sends:
    """The operations an item may name, matched in routing order."""

    def __init__(self, sends: Sequence[Operation]) -> None:
        self.table = [(compile_path(op.path)[0], op) for op in sends]  # as the router

    def find(self, path: str) -> tuple[Operation, dict[str, str]]:
        for pattern, operation in self.table:
            match = pattern.match(path)
            if match:
                return operation, match.groupdict()
        raise NotFound(f"no send to batch at {path[:200]!r} (only /messages/… and /forms/…)")


def _parts(response: Response) -> tuple[int, bytes, dict[str, str]]:
    headers = {k: v for k, v in response.headers.items() if k in _KEPT_HEADERS}
    return response.status_code, bytes(response.body), headers


def _item_answer(status: int, content: bytes, headers: dict[str, str]) -> bytes:
    named = {name.lower(): value for name, value in headers.items()}  # one spelling
    head = json.dumps({"status": status, "headers": named}, separators=(",", ":"))
    return (head[:-1] + ',"body":').encode() + (content or b"null") + b"}"


def operations(sends: Sequence[Operation]) -> list[Operation]:
    table = _Sends(sends)

    async def run_item(call: ApiCall, item: BatchItem) -> tuple[int, bytes, dict[str, str]]:
        # The batch's connection says nothing about the items' holds: like a 202 alone,
        # each hold outlives the request (``run_respond_async`` watches no client).
        # Each item answers for its own writes (its own 503), not the batch as a whole:
        # one item's rolled-back write must not hide the others' answers.
        TOUCHED.set(Touched())
        request = call.request
        try:
            operation, params = table.find(item.path)
            await call.engine.accounts.check_limits(call.account)
            scope = {**request.scope, "path": item.path, "path_params": params}
            scope["raw_path"] = item.path.encode()
            scope["query_string"] = b""
            item_request = Request(scope)
            check_path(item_request, operation.path_params)
            key = item.idempotency_key
            if key is not None and not IDEMPOTENCY_KEY.fullmatch(key):
                raise InvalidRequest(
                    "idempotencyKey must be 1 to 255 printable ASCII characters",
                    field="idempotencyKey",
                )
            raw = json.dumps(item.body, separators=(",", ":"), ensure_ascii=False).encode()
            body = await parse_body(raw, "application/json", operation)
            item_call = ApiCall(
                request=item_request,
                engine=call.engine,
                config=call.config,
                body=body,
                caller=call.caller,
            )
            fingerprint = request_fingerprint("POST", item.path, raw)
            return await run_respond_async(
                call.engine, call.account, key, fingerprint, operation, item_call
            )
        except ServiceError as exc:
            return _parts(service_error_response(exc))
        except StoreUnavailable:
            return _parts(store_unavailable_response(call.config.unavailable_retry_after))
        except Exception:
            logger.exception("internal error in a batch item (%s)", item.path[:200])
            return _parts(error_response(500, "internal_error", "internal error; it was logged"))

    async def batch(call: ApiCall) -> Payload:
        request = call.body_as(BatchRequest)
        answers = await asyncio.gather(*(run_item(call, item) for item in request.requests))
        return RawJson(b'{"responses":[' + b",".join(_item_answer(*a) for a in answers) + b"]}")

    return [
        Operation(
            "POST",
            "/batch",
            batch,
            operation_id="sendBatch",
            summary="Send many messages and forms in one request",
            description=(
                "Up to 100 sends (`/messages/…`, `/forms/…`), each run as if sent alone "
                "with `Prefer: respond-async` and its own idempotency key; each answer is "
                "what that send would have answered (202 while it holds: its answer "
                "comes on the outcome stream as `wait.ended`), in order."
            ),
            tag="messages",
            body=TypeAdapter(BatchRequest),
            response=TypeAdapter(BatchResponse),
        )
    ]
