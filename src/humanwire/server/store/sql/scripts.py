"""SQL files shipped inside the package (schemas, migrations), read with
``importlib.resources`` so they load from a wheel, a zip or a source tree alike."""

from __future__ import annotations

from importlib.resources import files

__all__ = ["sql_scripts"]


def sql_scripts(package: str, folder: str) -> list[tuple[str, str]]:
    """``(file name, text)`` of every ``.sql`` file in ``folder`` of ``package``, in the
    order of their names."""
    root = files(package).joinpath(folder)
    found = [
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in root.iterdir()
        if entry.name.endswith(".sql")
    ]
    if not found:
        raise RuntimeError(f"no SQL files in {package}/{folder}: the package is incomplete")
    return sorted(found)
