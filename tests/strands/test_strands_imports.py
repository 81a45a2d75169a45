"""Import isolation: ``import humanwire`` loads no Strands; without the extra the adapter
names the install command."""

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


def test_import_humanwire_loads_no_strands() -> None:
    result = _run(
        """
        import sys
        import humanwire, humanwire.approval, humanwire._tooling, humanwire._pauses
        import humanwire._tool_clients
        print(sorted(m for m in sys.modules if m.split(".")[0] == "strands"))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_extra_gives_install_hint() -> None:
    result = _run(
        """
        import sys

        class Blocker:
            def find_spec(self, name, path=None, target=None):
                if name == "strands" or name.startswith("strands."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, Blocker())
        try:
            import humanwire.strands
        except ImportError as exc:
            print("IMPORT-ERROR:", exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "IMPORT-ERROR:" in result.stdout
    assert 'pip install "humanwire[strands]"' in result.stdout
