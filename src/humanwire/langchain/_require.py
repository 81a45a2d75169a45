"""Fail early, with the install command, when LangChain or LangGraph is missing."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

INSTALL_HINT = (
    "humanwire.langchain needs {package}, which is not installed. "
    'Install the extra: pip install "humanwire[langchain]"'
)


def require(module: str, package: str) -> ModuleType:
    """Import ``module`` or raise an ``ImportError`` naming the extra to install."""
    try:
        return import_module(module)
    except ImportError as exc:
        raise ImportError(INSTALL_HINT.format(package=package), name=exc.name) from exc
