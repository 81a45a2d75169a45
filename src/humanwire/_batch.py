"""Multiplexed sends gathered into ``POST /batch`` (the async driver's path).

Past a few waits in flight the async driver asks for 202s; one HTTP exchange per send
then costs more CPU than the send itself (on both sides). So each such send is queued
here: a worker takes what queued meanwhile (up to ``BATCH_MAX_ITEMS`` items and
``BATCH_MAX_BYTES``) into one ``POST /batch``, at most ``BATCHES_AT_ONCE`` in flight, and
hands each send its own answer as an ``httpx.Response`` — parsing, errors, retries and the
wait for the outcome event stay the flow's own. While batches are in flight the next one
fills, so the batch size follows the load by itself.

A transport error reaches every send of the batch (each retries under its own key); an
error answer to the batch itself (401, 429, 503…) is each send's answer. A service
without ``/batch`` (404, 405) or refusing its size (413) gets the sends one by one: the
queue answers ``None`` and the driver sends alone.
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING, Any

import httpx

from . import _constants as C
from ._http import compact_json

if TYPE_CHECKING:
    from ._http import Send

__all__ = ["AsyncBatcher", "batch_path"]

_MIN_BYTES = 8 * 1024
_BATCHED_PREFIXES = ("/messages/", "/forms/")
_NOT_FORWARDED = frozenset({C.IDEMPOTENCY_KEY_HEADER.lower(), "prefer", "content-type"})


def batch_path(send: Send) -> str | None:
    """The path ``POST /batch`` would carry ``send`` under, or None: not a batchable send."""
    if send.method != "POST" or not send.base_url:
        return None
    base = send.base_url.rstrip("/")
    if not send.url.startswith(base):
        return None
    path = send.url[len(base) :]
    return path if path.startswith(_BATCHED_PREFIXES) else None


class _Queued:
    __slots__ = ("future", "item", "path", "send")

    def __init__(self, send: Send, path: str, future: asyncio.Future[httpx.Response | None]):
        self.send = send
        self.path = path
        self.future = future
        entry: dict[str, Any] = {"path": path, "body": send.json}
        key = send.headers.get(C.IDEMPOTENCY_KEY_HEADER)
        if key is not None:
            entry["idempotencyKey"] = key
        self.item = compact_json(entry)


class AsyncBatcher:
    """Queues sends and posts them in batches on the caller's event loop."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.supported = True
        self.batches = 0
        """Batches posted (for benchmarks and tests)."""
        self.max_bytes = C.BATCH_MAX_BYTES
        """Halved on each 413 (a service configured with a smaller body limit)."""
        self._queue: collections.deque[_Queued] = collections.deque()
        self._worker: asyncio.Task[None] | None = None
        self._slots = asyncio.Semaphore(C.BATCHES_AT_ONCE)
        self._posts: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> int:
        """Sends queued plus batches posted whose answers have not come back yet (tests)."""
        return len(self._queue) + sum(1 for post in self._posts if not post.done())

    async def send(self, send: Send, path: str) -> httpx.Response | None:
        """The send's answer; None: send it alone. Raises the batch's transport error."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[httpx.Response | None] = loop.create_future()
        queued = _Queued(send, path, future)
        if len(queued.item) > self.max_bytes // 2:
            return None  # a large form alone: a batch of it saves nothing
        self._queue.append(queued)
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._run())
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            await self._slots.acquire()
            await asyncio.sleep(0)  # the sends queued in this turn of the loop come along
            batch = self._take()
            if not batch:
                self._slots.release()
                continue
            post = loop.create_task(self._post(batch))
            self._posts.add(post)
            post.add_done_callback(self._posted)

    def _posted(self, post: asyncio.Task[None]) -> None:
        self._posts.discard(post)
        self._slots.release()

    def _take(self) -> list[_Queued]:
        batch: list[_Queued] = []
        size = 0
        while self._queue and len(batch) < C.BATCH_MAX_ITEMS:
            queued = self._queue[0]
            if queued.future.done():  # its caller gave up before it went out
                self._queue.popleft()
                continue
            if batch and size + len(queued.item) > self.max_bytes:
                break
            self._queue.popleft()
            batch.append(queued)
            size += len(queued.item) + 1
        return batch

    async def _post(self, batch: list[_Queued]) -> None:
        first = batch[0].send
        headers = {k: v for k, v in first.headers.items() if k.lower() not in _NOT_FORWARDED}
        headers["Content-Type"] = "application/json"
        # As long as the longest item may take (an item that does not hold answers when
        # it ends); most answer at once.
        reads = [q.send.timeout.read for q in batch]
        read = None if None in reads else max(r for r in reads if r is not None)
        timeout = httpx.Timeout(first.timeout.connect, read=read, write=first.timeout.write)
        content = b'{"requests":[' + b",".join(q.item for q in batch) + b"]}"
        self.batches += 1
        try:
            response = await self.http.post(
                first.base_url.rstrip("/") + "/batch",
                content=content,
                headers=headers,
                timeout=timeout,
            )
        except httpx.TransportError as exc:
            _settle_all(batch, error=exc)
            return
        except BaseException as exc:
            _settle_all(batch, error=exc)
            raise
        try:
            self._answer(batch, response)
        except BaseException as exc:
            _settle_all(batch, error=exc)
            raise

    def _answer(self, batch: list[_Queued], response: httpx.Response) -> None:
        status = response.status_code
        if status in (404, 405, 413):
            if status == 413:
                self.max_bytes = max(self.max_bytes // 2, _MIN_BYTES)
            else:
                self.supported = False
            _settle_all(batch, result=None)
            return
        if status != 200:
            for queued in batch:  # the batch's own error (401, 429, 503…) is each send's
                _settle(queued, _item_response(queued, status, response.headers, response.content))
            return
        answers = _answers(response, len(batch))
        if answers is None:
            # Not a batch answer: a proxy's page, say. Each send goes alone instead.
            _settle_all(batch, result=None)
            return
        for queued, answer in zip(batch, answers, strict=True):
            body = answer.get("body")
            content = b"" if body is None else compact_json(body)
            _settle(queued, _item_response(queued, answer["status"], answer["headers"], content))

    async def aclose(self) -> None:
        tasks = [t for t in (self._worker, *self._posts) if t is not None]
        for task in tasks:
            task.cancel()
        for queued in self._queue:
            if not queued.future.done():
                queued.future.cancel()
        self._queue.clear()
        await asyncio.gather(*tasks, return_exceptions=True)


def _answers(response: httpx.Response, count: int) -> list[dict[str, Any]] | None:
    try:
        answers = response.json()["responses"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(answers, list) or len(answers) != count:
        return None
    for answer in answers:
        if not (
            isinstance(answer, dict)
            and isinstance(answer.get("status"), int)
            and isinstance(answer.get("headers", {}), dict)
        ):
            return None
        answer.setdefault("headers", {})
    return answers


def _item_response(queued: _Queued, status: int, headers: Any, content: bytes) -> httpx.Response:
    send = queued.send
    request = httpx.Request(send.method, send.url, headers=send.headers)
    kept = {k: v for k, v in dict(headers).items() if k.lower() != "content-length"}
    if content:
        kept["content-type"] = "application/json"
    return httpx.Response(status, headers=kept, content=content, request=request)


def _settle(queued: _Queued, response: httpx.Response | None) -> None:
    if not queued.future.done():
        queued.future.set_result(response)


def _settle_all(
    batch: list[_Queued], result: httpx.Response | None = None, error: BaseException | None = None
) -> None:
    for queued in batch:
        if queued.future.done():
            continue
        if isinstance(error, asyncio.CancelledError):
            queued.future.cancel()
        elif error is not None:
            queued.future.set_exception(error)
        else:
            queued.future.set_result(result)
