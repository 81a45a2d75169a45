"""Fail early, with the install command, when Google ADK is missing."""

from __future__ import annotations

INSTALL_HINT = (
    "humanwire.google_adk needs Google's Agent Development Kit (google-adk), which is not "
    'installed. Install the extra: pip install "humanwire[google-adk]"'
)


def require_google_adk() -> None:
    """Import ``google.adk`` or raise an ``ImportError`` naming the extra to install."""
    try:
        import google.adk.tools  # noqa: F401
    except ImportError as exc:
        raise ImportError(INSTALL_HINT, name=exc.name) from exc
