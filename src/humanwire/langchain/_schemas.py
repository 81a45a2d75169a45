"""The argument schemas of the LangChain tools: the shared ones of
``humanwire._tool_schemas`` (the MCP server and LlamaIndex read the same)."""

from __future__ import annotations

from humanwire._tool_schemas import (
    CallInput,
    CallWithRecipientInput,
    CheckInteractionInput,
    FormFieldSpec,
    MessageInput,
    NoInput,
    NoteInput,
    form_fields_from_specs,
    form_input_schema,
    message_input_schema,
)

__all__ = [
    "CallInput",
    "CallWithRecipientInput",
    "CheckInteractionInput",
    "FormFieldSpec",
    "MessageInput",
    "NoInput",
    "NoteInput",
    "form_fields_from_specs",
    "form_input_schema",
    "message_input_schema",
]
