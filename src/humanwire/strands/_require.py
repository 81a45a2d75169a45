"""Fail early, with the install command, when Strands Agents is missing."""

from __future__ import annotations

INSTALL_HINT = (
    "humanwire.strands needs Strands Agents (strands-agents 1.62 or newer), which is not "
    'installed. Install the extra: pip install "humanwire[strands]"'
)


def require_strands() -> None:
    """Import ``strands`` or raise an ``ImportError`` naming the extra to install."""
    try:
        import strands  # noqa: F401
    except ImportError as exc:
        raise ImportError(INSTALL_HINT, name=exc.name) from exc
