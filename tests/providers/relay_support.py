"""What the relay tests share: chat models that stream at a pace and keep a record of
each request (how much of its answer a stream gave before it was stopped), and a socket
killed the way a network kills it (no close frame)."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from websockets.sync.client import ClientConnection

from humanwire.testing.voice import PacedChatModel, tokens

KILLED_MID_TURN = (
    '{"action": "say", "text": "Hi, this is Acme. Friday?"}',
    '{"action": "say", "text": "Great. And would you also be able to stay on until '
    'six on Friday, or would you rather leave at four as you usually do?"}',
    "They said Friday works.",
)
"""The killed-socket test's model's answers: the second turn streams for about a
second."""


@dataclass
class Asked:
    """One request to a ``Scripted`` model."""

    prompt: str
    """The request's last message (the transcript so far, for a turn)."""
    answer: str
    streamed: bool = False
    yielded: int = 0
    """Tokens of ``answer`` the stream gave before it ended or was stopped."""
    finished: bool = False
    """The stream gave every token and was read to its end."""
    probed: Any = None
    """``Script.probe()`` just before the stream's last token (what the carrier had by
    then)."""

    @property
    def tokens(self) -> int:
        return len(tokens(self.answer))


@dataclass
class Script:
    """A ``Scripted`` model's answers, in the order the agent asks, and its record."""

    answers: Sequence[str]
    probe: Callable[[], Any] | None = None
    asked: list[Asked] = field(default_factory=list)

    def __call__(self, messages: Sequence[BaseMessage]) -> str:
        answer = self.answers[len(self.asked)]  # IndexError: the model fails
        self.asked.append(Asked(str(messages[-1].content), answer))
        return answer


class Scripted(PacedChatModel):
    """``PacedChatModel`` answering ``Script(...)``'s answers in turn, recording how far
    each stream got: ``Scripted(Script([...]), per_token=0.08)``."""

    async def _astream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        script = self.reply
        assert isinstance(script, Script)
        asked: Asked | None = None
        async for chunk in super()._astream(messages, *args, **kwargs):
            if asked is None:
                asked = script.asked[-1]
                asked.streamed = True
            asked.yielded += 1
            if asked.yielded == asked.tokens and script.probe is not None:
                asked.probed = script.probe()
            yield chunk
        if asked is not None:
            asked.finished = True


def slow_when_asked(messages: Sequence[BaseMessage]) -> str:
    said = str(messages[-1].content)
    if "slow please" in said:
        return '{"action": "say", "text": "Let me think about that for a long while."}'
    return '{"action": "say", "text": "Right away."}'


class SlowWhenAsked(PacedChatModel):
    """Answers in no time, except a turn after "slow please": three seconds."""

    async def _astream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        if "slow please" in str(messages[-1].content):
            await asyncio.sleep(3.0)
        async for chunk in super()._astream(messages, *args, **kwargs):
            yield chunk


def kill(connection: ClientConnection) -> None:
    """The socket's TCP connection reset under it: no close frame, no FIN, as when the
    carrier's side (or the network between) dies."""
    raw = connection.socket
    # the client's reading thread, woken by the shutdown, waits on this lock: it can
    # neither send a close frame nor a FIN before the socket is gone
    with connection.protocol_mutex:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raw.shutdown(socket.SHUT_RD)  # wakes the reading thread (nothing sent)
        raw.close()  # with a zero linger: an RST
