"""Import isolation: ``import humanwire`` loads no Google ADK; without the extra the
adapter names the install command."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_import_humanwire_loads_no_adk() -> None:
    result = _run(
        """
        import sys
        import humanwire, humanwire.approval
        print(sorted(m for m in sys.modules if m.startswith(("google.adk", "google.genai"))))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_extra_gives_install_hint() -> None:
    result = _run(
        """
        import sys
        sys.modules["google.adk"] = None  # as if not installed
        try:
            import humanwire.google_adk
        except ImportError as exc:
            print("IMPORT-ERROR:", exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "IMPORT-ERROR:" in result.stdout
    assert 'pip install "humanwire[google-adk]"' in result.stdout
