"""Fail early, with the install command, when the OpenAI Agents SDK is missing."""

from __future__ import annotations

INSTALL_HINT = (
    "humanwire.openai_agents needs the OpenAI Agents SDK (openai-agents), which is not "
    'installed. Install the extra: pip install "humanwire[openai-agents]"'
)


def require_openai_agents() -> None:
    """Import ``agents`` or raise an ``ImportError`` naming the extra to install."""
    try:
        import agents  # noqa: F401
    except ImportError as exc:
        raise ImportError(INSTALL_HINT, name=exc.name) from exc
