"""Helpers of the LangChain adapter tests (a module name no other test folder uses)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

Mode = Literal["sync", "async"]

PHONE = "+12025550100"
"""The inbox's default human (sms, whatsapp, calls)."""
SLACK = "U0HUMAN0001"
OTHER_PHONE = "+442079460123"


def tool_call(tool: BaseTool, args: dict[str, Any], call_id: str = "call-1") -> dict[str, Any]:
    return {"type": "tool_call", "name": tool.name, "id": call_id, "args": args}


async def run_tool(tool: BaseTool, args: dict[str, Any], mode: Mode) -> ToolMessage:
    """Invoke with a ToolCall, sync (in a thread, as an agent's worker would) or async."""
    call = tool_call(tool, args)
    if mode == "sync":
        message = await asyncio.to_thread(tool.invoke, call)
    else:
        message = await tool.ainvoke(call)
    assert isinstance(message, ToolMessage)
    return message


def scripted_model(*turns: Any) -> Any:
    """A chat model that plays ``turns`` (``AIMessage``s, scripted tool calls included)
    in order, for offline agent loops; ``bind_tools`` is a no-op so agents accept it."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class ScriptedChatModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    return ScriptedChatModel(messages=iter(turns))


def model_schema(tool: BaseTool) -> dict[str, Any]:
    """The JSON schema of the arguments the model sees."""
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        return schema
    assert issubclass(schema, BaseModel)
    return schema.model_json_schema()


def properties(tool: BaseTool) -> set[str]:
    """The argument names the model sees."""
    return set(model_schema(tool).get("properties", {}))


def text(message: ToolMessage) -> str:
    assert isinstance(message.content, str)
    return message.content
