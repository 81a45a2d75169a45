"""A ``FunctionTool`` that validates the model's arguments and turns service errors into
error outputs, instead of exceptions that end a direct ``tool.call``."""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import FunctionTool, ToolOutput
from pydantic import ValidationError

from humanwire.errors import HumanWireError, error_from_validation

__all__ = ["HumanWireFunctionTool", "error_text"]


def error_text(exc: HumanWireError) -> str:
    """What the model reads when the service (or the client's own check) refused."""
    return f"Error from humanwire: {exc}"


class HumanWireFunctionTool(FunctionTool):
    """Arguments are checked against ``fn_schema`` (unknown ones refused) before the call;
    a ``HumanWireError`` becomes ``ToolOutput(is_error=True)`` on the sync and async paths
    alike. A human who does not answer is not an error: that text is a normal output."""

    def _checked_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        schema = self.metadata.fn_schema
        context_name = self.ctx_param_name
        context = {context_name: kwargs.pop(context_name)} if context_name in kwargs else {}
        if schema is None:
            return {**kwargs, **context}
        try:
            parsed = schema.model_validate(kwargs)
        except ValidationError as exc:
            raise error_from_validation(exc) from None
        # Keep validated values (FormField instances) and only what the model sent.
        checked = {name: getattr(parsed, name) for name in parsed.model_fields_set}
        return {**checked, **context}

    def _error_output(self, exc: HumanWireError, kwargs: dict[str, Any]) -> ToolOutput:
        text = error_text(exc)
        shown = {k: v for k, v in kwargs.items() if k != self.ctx_param_name}
        return ToolOutput(
            content=text,
            tool_name=self.metadata.get_name(),
            raw_input={"args": (), "kwargs": shown},
            raw_output=text,
            is_error=True,
            exception=exc,
        )

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        try:
            return super().call(*args, **self._checked_kwargs(dict(kwargs)))
        except HumanWireError as exc:
            return self._error_output(exc, kwargs)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        try:
            return await super().acall(*args, **self._checked_kwargs(dict(kwargs)))
        except HumanWireError as exc:
            return self._error_output(exc, kwargs)
