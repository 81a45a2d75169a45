"""Fail early, with the install command, when LlamaIndex is missing."""

from __future__ import annotations

INSTALL_HINT = (
    "humanwire.llama_index needs LlamaIndex, which is not installed. "
    'Install the extra: pip install "humanwire[llama-index]"'
)


def require_llama_index() -> None:
    """Import ``llama_index.core`` or raise an ``ImportError`` naming the extra."""
    try:
        import llama_index.core  # noqa: F401
    except ImportError as exc:
        raise ImportError(INSTALL_HINT, name=exc.name) from exc
