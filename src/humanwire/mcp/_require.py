"""The ``mcp`` package, or an ImportError saying which extra installs it."""

from __future__ import annotations

import importlib.util

__all__ = ["mcp_available", "require_mcp"]

_HINT = "humanwire.mcp needs the MCP SDK: pip install 'humanwire[mcp]'"


def mcp_available() -> bool:
    """Whether the ``mcp`` package is installed (without importing it)."""
    return importlib.util.find_spec("mcp") is not None


def require_mcp() -> None:
    if not mcp_available():
        raise ImportError(_HINT)
