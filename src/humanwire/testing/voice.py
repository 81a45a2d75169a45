"""A chat model for testing and measuring calls: it answers at a fixed pace, streamed or
whole, like a hosted model does, without a network. Needs ``humanwire[voice]``
(LangChain).

::

    from humanwire.testing.voice import PacedChatModel

    model = PacedChatModel(
        lambda messages: '{"action": "say", "text": "Hello there."}',
        first_token=0.3,    # seconds before the first token
        per_token=0.02,     # seconds between tokens
    )
    config = replace(config, voice_chat_model=model)

Tokens are the reply's words, each with the space after it. ``ainvoke`` takes as long as
streaming the whole reply would. Concurrent requests run independently (each sleeps on
its own), as a hosted model's do.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

__all__ = ["PacedChatModel", "tokens"]


def tokens(text: str) -> list[str]:
    """``text`` as the model streams it: each word with the whitespace after it."""
    return re.findall(r"\S+\s*|\s+", text)


class PacedChatModel(BaseChatModel):
    """Answers ``reply(messages)``: the first token after ``first_token`` seconds, each
    next one ``per_token`` seconds later."""

    reply: Callable[[Sequence[BaseMessage]], str]
    first_token: float = 0.3
    per_token: float = 0.02

    def __init__(
        self,
        reply: Callable[[Sequence[BaseMessage]], str],
        *,
        first_token: float = 0.3,
        per_token: float = 0.02,
    ) -> None:
        super().__init__(reply=reply, first_token=first_token, per_token=per_token)  # type: ignore[call-arg]

    @property
    def _llm_type(self) -> str:
        return "humanwire-paced"

    def duration(self, text: str) -> float:
        """Seconds the whole of ``text`` takes."""
        return self.first_token + max(len(tokens(text)) - 1, 0) * self.per_token

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        import time

        text = self.reply(messages)
        time.sleep(self.duration(text))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self.reply(messages)
        await asyncio.sleep(self.duration(text))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        import time

        for index, token in enumerate(tokens(self.reply(messages))):
            time.sleep(self.first_token if index == 0 else self.per_token)
            yield ChatGenerationChunk(message=AIMessageChunk(content=token))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for index, token in enumerate(tokens(self.reply(messages))):
            await asyncio.sleep(self.first_token if index == 0 else self.per_token)
            yield ChatGenerationChunk(message=AIMessageChunk(content=token))
