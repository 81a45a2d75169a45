"""Received mail parsed in worker processes, each message with a hard time limit.

:func:`~.inbound.parse_message` is bounded by what it reads (the header section, the
MIME parts, linear text extraction), but it runs third-party parsers on hostile input,
and in a thread it would still hold the GIL against the service's event loop while it
works. So it runs in a few child processes of the service's own Python: the HTTP side
never waits for it, and a message that overruns ``timeout`` (or the memory bound) has
its worker killed and replaced; a thread could not be stopped.

The child imports only the parsing modules (not the service: starting costs a fraction
of a second), reads jobs on stdin and writes results on stdout, each a length-prefixed
pickle; the parent only ever unpickles what its own child wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from .inbound import Bounce, InboundEmail, MessageRefused, parse_message

__all__ = ["MessageParsers", "ParseOverrun"]

_log = logging.getLogger("humanwire.email")
_LENGTH = struct.Struct(">Q")
_READY = b"ready\n"
_START_TIMEOUT = 120.0
"""Seconds a new worker has to import the parsing modules (a loaded machine is slow)."""

# Run as ``python -c``: the email and delivery packages' ``__init__`` re-export the
# whole channel (pydantic types, starlette): seconds of imports the parser does not use.
# They are put in place as bare packages, so only the parsing modules load.
_BOOT = """
import sys, types
sys.path.insert(0, {root!r})
for name, path in {packages!r}:
    package = types.ModuleType(name)
    package.__path__ = [path]
    sys.modules[name] = package
from humanwire.server.delivery.email.parsing import serve
serve({memory!r})
"""


class ParseOverrun(Exception):
    """A message took its worker past the time limit (or killed it): the worker is gone."""


def _limit_memory(memory: int | None) -> None:
    if memory is None:
        return
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def _read_exactly(stream: IO[bytes], count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = stream.read(count - len(data))
        if not chunk:
            raise EOFError("the other end closed")
        data += chunk
    return bytes(data)


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes:
    (length,) = _LENGTH.unpack(_read_exactly(stream, _LENGTH.size))
    return _read_exactly(stream, length)


def serve(memory: int | None) -> None:
    """The worker's loop (in the child): a job in, its outcome out, until stdin ends."""
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print must not corrupt the channel
    jobs = sys.stdin.buffer
    _limit_memory(memory)
    import mailparser_reply  # noqa: F401  (loaded before the first job, not during it)

    channel.write(_READY)
    channel.flush()
    while True:
        try:
            raw, reply_domain, tokens, envelope_from = pickle.loads(_read_frame(jobs))
        except EOFError:
            return
        outcome: tuple[str, Any]
        try:
            parsed = parse_message(raw, reply_domain, tokens, envelope_from)
            if isinstance(parsed, list):  # the raw bytes stay with the parent
                parsed = [dataclasses.replace(email, raw=b"") for email in parsed]
            outcome = ("parsed", parsed)
        except MessageRefused as refused:
            outcome = ("refused", refused.reply)
        except MemoryError:
            outcome = ("refused", "552 5.3.4 The message is too large to read")
        except Exception as exc:  # a parser's bug on odd input: refused, not fatal
            outcome = ("refused", f"554 5.6.0 The message cannot be read ({type(exc).__name__})")
        del raw
        _write_frame(channel, pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))


class _Worker:
    """One child process; used by one message at a time."""

    def __init__(self, memory: int | None) -> None:
        import humanwire

        root = str(Path(humanwire.__file__).resolve().parents[1])
        here = Path(__file__).resolve().parent
        packages = [
            ("humanwire.server.delivery", str(here.parent)),
            ("humanwire.server.delivery.email", str(here)),
        ]
        boot = _BOOT.format(root=root, packages=packages, memory=memory)
        self.process = subprocess.Popen(
            [sys.executable, "-c", boot],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        self._ready = False

    def _killed_after(self, seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, self.kill)
        timer.daemon = True
        timer.start()
        return timer

    def call(self, job: bytes, timeout: float) -> tuple[str, Any]:
        """Blocking (run in a thread): the job's outcome; ``ParseOverrun`` when the
        worker was killed at ``timeout`` or died."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            if not self._ready:
                timer = self._killed_after(_START_TIMEOUT)
                try:
                    if _read_exactly(stdout, len(_READY)) != _READY:
                        raise EOFError("not a parsing worker")
                finally:
                    timer.cancel()
                self._ready = True
            timer = self._killed_after(timeout)
            try:
                _write_frame(stdin, job)
                outcome: tuple[str, Any] = pickle.loads(_read_frame(stdout))
            finally:
                timer.cancel()
        except (EOFError, OSError, pickle.UnpicklingError, struct.error) as exc:
            self.kill()
            raise ParseOverrun(type(exc).__name__) from None
        return outcome

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()

    def close(self) -> None:
        self.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class MessageParsers:
    """``workers`` child processes that parse received mail, started when the first
    message comes; each message has ``timeout`` seconds and the child ``memory`` bytes of
    address space (None: unbounded), past which the worker is killed and replaced."""

    def __init__(
        self, *, workers: int = 2, timeout: float = 10.0, memory: int | None = 2 << 30
    ) -> None:
        self.timeout = timeout
        self.memory = memory
        self._slots = asyncio.Semaphore(workers)
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = False

    async def parse(
        self, raw: bytes, reply_domain: str, tokens: tuple[str, ...], envelope_from: str
    ) -> list[InboundEmail] | Bounce:
        """:func:`parse_message` in a worker: raises :class:`MessageRefused` as it
        does, and :class:`ParseOverrun` past the time or memory bound."""
        job = pickle.dumps((raw, reply_domain, tokens, envelope_from), pickle.HIGHEST_PROTOCOL)
        async with self._slots:
            if self._closed:
                raise ParseOverrun("stopped")
            if self._idle:
                worker = self._idle.pop()
            else:
                worker = await asyncio.to_thread(_Worker, self.memory)
            self._busy.add(worker)
            try:
                kind, value = await asyncio.to_thread(worker.call, job, self.timeout)
            except BaseException:
                worker.kill()
                await asyncio.to_thread(worker.close)
                raise
            finally:
                self._busy.discard(worker)
            if self._closed:
                await asyncio.to_thread(worker.close)
            else:
                self._idle.append(worker)
        if kind == "refused":
            raise MessageRefused(str(value))
        if isinstance(value, list):
            return [dataclasses.replace(email, raw=raw) for email in value]
        assert isinstance(value, Bounce)
        return value

    @property
    def pids(self) -> tuple[int, ...]:
        """The worker processes' ids (none before the first message)."""
        return tuple(worker.process.pid for worker in (*self._idle, *self._busy))

    async def aclose(self) -> None:
        self._closed = True
        workers = [*self._idle, *self._busy]
        self._idle.clear()
        for worker in workers:
            worker.kill()
        await asyncio.gather(*(asyncio.to_thread(worker.close) for worker in workers))
