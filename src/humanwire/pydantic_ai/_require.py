"""Fail early, with the install command, when Pydantic AI is missing."""

from __future__ import annotations

INSTALL_HINT = (
    "humanwire.pydantic_ai needs Pydantic AI (pydantic-ai-slim 2.68 or newer, Python 3.11+), "
    'which is not installed. Install the extra: pip install "humanwire[pydantic-ai]"'
)


def require_pydantic_ai() -> None:
    """Import ``pydantic_ai`` or raise an ``ImportError`` naming the extra."""
    try:
        import pydantic_ai  # noqa: F401
    except ImportError as exc:
        raise ImportError(INSTALL_HINT, name=exc.name) from exc
