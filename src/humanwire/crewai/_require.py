"""Fail early, with the install command, when CrewAI is missing."""

from __future__ import annotations

INSTALL_HINT = (
    "humanwire.crewai needs CrewAI (crewai), which is not installed. Install the extra: "
    'pip install "humanwire[crewai]" (CrewAI pins pydantic<2.13, openai<3 and mcp<2: '
    "give it an environment of its own, apart from humanwire[openai-agents] and "
    "humanwire[mcp])"
)


def require_crewai() -> None:
    """Import ``crewai`` or raise an ``ImportError`` naming the extra to install."""
    try:
        import crewai  # noqa: F401
    except ImportError as exc:
        raise ImportError(INSTALL_HINT, name=exc.name) from exc
