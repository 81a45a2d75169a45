"""The callee's side of a ConversationRelay session, shared by the Twilio and Telnyx
fakes: both carriers open the service's WebSocket, send ``setup``, then ``prompt`` /
``dtmf`` / ``interrupt`` as the person speaks, and read ``text`` tokens and ``end``.
What differs (the handshake's headers, the ``setup`` fields, the check of the frames the
service sends) is the fake's, passed in."""

from __future__ import annotations

import asyncio
import collections
import json
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .callee import BargeIn, CalleeScript

__all__ = ["RelayCall", "relay_session"]


class RelayCall(Protocol):
    """What a fake's call record keeps of a relay session."""

    said: list[str]
    heard: list[str | None]
    relay_messages: list[dict[str, Any]]
    interrupted: list[str]
    hang_up_requested: bool
    ended_by: Any


async def relay_session(
    url: str,
    *,
    headers: Mapping[str, str],
    setup: dict[str, Any] | None,
    call: RelayCall,
    script: CalleeScript,
    says: collections.deque[str | BargeIn | None],
    lock: threading.RLock,
    wait: Callable[[float], Awaitable[None]],
    hang_up_now: Callable[[], bool],
    greeted: bool,
    check: Callable[[dict[str, Any]], None] = lambda message: None,
    open_timeout: float = 10.0,
) -> tuple[str, str]:
    """Opens the socket at ``url`` (with ``headers``), sends ``setup`` (None: never, the
    carrier misbehaving) and plays the callee: ``("completed", handoffData)`` when the
    service sent ``end``, ``("failed", "")`` when it closed the socket, ``("hung-up",
    "")`` when the callee (or the API, or the time limit) ended the call. Raises what
    ``websockets`` raises when the socket cannot be opened (``InvalidStatus``: refused).
    Each frame the service sends is recorded in ``call.relay_messages`` and handed to
    ``check``."""
    from websockets.asyncio.client import connect

    async with connect(url, additional_headers=dict(headers), open_timeout=open_timeout) as socket:
        if setup is not None:
            await socket.send(json.dumps(setup))
        return await _play(
            socket, call, script, says, lock, wait, hang_up_now, greeted=greeted, check=check
        )


async def _play(
    socket: Any,
    call: RelayCall,
    script: CalleeScript,
    says: collections.deque[str | BargeIn | None],
    lock: threading.RLock,
    wait: Callable[[float], Awaitable[None]],
    hang_up_now: Callable[[], bool],
    *,
    greeted: bool,
    check: Callable[[dict[str, Any]], None],
) -> tuple[str, str]:
    """After a welcome greeting the callee answers it first; then each of the agent's
    turns (its ``text`` tokens up to ``last``) is answered by the next entry of ``says``:
    a sentence is a final ``prompt``, digits are ``dtmf`` messages, None is silence, a
    ``BargeIn`` interrupts the agent's next turn once its first words are out."""
    from websockets.exceptions import ConnectionClosed

    from .callee import BargeIn

    tokens: list[str] = []
    answers = 0

    def record(frame: str | bytes) -> dict[str, Any]:
        message = json.loads(frame)
        with lock:
            call.relay_messages.append(message)
        check(message)
        return dict(message)

    def end_data(message: Mapping[str, Any]) -> str:
        return str(message.get("handoffData") or "")

    async def reply(entry: str | BargeIn | None) -> None:
        if entry is None:
            with lock:
                call.heard.append(None)
            return
        text = entry.text if isinstance(entry, BargeIn) else entry
        with lock:
            call.heard.append(text)
        if re.fullmatch(r"[0-9*#]+", text):
            for digit in text:
                await socket.send(json.dumps({"type": "dtmf", "digit": digit}))
            return
        prompt = {"type": "prompt", "voicePrompt": text, "lang": "en-US", "last": True}
        await socket.send(json.dumps(prompt))

    def finish_turn() -> None:
        spoken = "".join(tokens).strip()
        tokens.clear()
        if spoken:
            with lock:
                call.said.append(spoken)

    def callee_hangs_up() -> tuple[str, str]:
        with lock:
            call.hang_up_requested = True
            call.ended_by = call.ended_by or "callee"
        return "hung-up", ""

    try:
        if greeted:
            if not says or script.hang_up_after == 0:
                return callee_hangs_up()
            answers += 1
            await wait(script.seconds_per_turn)
            await reply(says.popleft())
        while True:
            if hang_up_now():
                return "hung-up", ""
            try:
                frame = await asyncio.wait_for(socket.recv(), 0.05)
            except TimeoutError:
                continue
            message = record(frame)
            kind = message.get("type")
            if kind == "end":
                finish_turn()
                return "completed", end_data(message)
            if kind != "text":
                continue
            tokens.append(str(message.get("token", "")))
            if says and isinstance(says[0], BargeIn) and "".join(tokens).strip():
                barge = says.popleft()
                assert isinstance(barge, BargeIn)
                heard_so_far = "".join(tokens).strip()
                tokens.clear()
                with lock:
                    call.said.append(heard_so_far)
                    call.interrupted.append(heard_so_far)
                interrupt = {
                    "type": "interrupt",
                    "utteranceUntilInterrupt": heard_so_far,
                    "durationUntilInterruptMs": 400,
                }
                await socket.send(json.dumps(interrupt))
                # the carrier drops what was still coming of the cut turn: wait until
                # the agent is quiet and the person has finished speaking, then prompt
                done_speaking = asyncio.get_running_loop().time() + barge.speaking
                while True:
                    try:
                        frame = await asyncio.wait_for(socket.recv(), 0.1)
                    except TimeoutError:
                        if asyncio.get_running_loop().time() >= done_speaking:
                            break
                        continue
                    message = record(frame)
                    if message.get("type") == "end":
                        return "completed", end_data(message)
                answers += 1
                await reply(barge)
                continue
            if not message.get("last"):
                continue
            finish_turn()
            # the agent may end the call right after its words: listen while the
            # callee takes its time to answer
            await wait(script.seconds_per_turn)
            try:
                frame = await asyncio.wait_for(socket.recv(), 0.05)
            except TimeoutError:
                pass
            else:
                message = record(frame)
                if message.get("type") == "end":
                    return "completed", end_data(message)
            if hang_up_now():
                return "hung-up", ""
            limit = script.hang_up_after
            if not says or (limit is not None and answers >= limit):
                return callee_hangs_up()
            answers += 1
            await reply(says.popleft())
    except ConnectionClosed:
        finish_turn()
        return "failed", ""
