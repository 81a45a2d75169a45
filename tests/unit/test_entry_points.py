"""The seams declared as entry points in ``pyproject.toml`` resolve to what the installed
package holds: the client's embedded service (``humanwire.embedded``) and the service's
extensions (``humanwire.extensions``). A module or function renamed without its entry
point fails here, not at a user's first embedded call."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from humanwire.embedded_service import ENTRY_POINT_GROUP, ENTRY_POINT_NAME, default_entry_point
from humanwire.server.http import extensions

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def declared(group: str) -> dict[str, str]:
    with PYPROJECT.open("rb") as handle:
        project = tomllib.load(handle)["project"]
    return dict(project["entry-points"][group])


@pytest.mark.parametrize("group", [ENTRY_POINT_GROUP, extensions.ENTRY_POINT_GROUP])
def test_the_installed_entry_points_are_the_declared_ones(group: str) -> None:
    """Entry points are read from the installed metadata: one added to pyproject.toml
    needs the package reinstalled (pip install -e .)."""
    installed = {point.name: point.value for point in entry_points(group=group)}
    assert installed == declared(group)


def test_the_embedded_service_entry_point_resolves_to_the_servers_starter() -> None:
    from humanwire.server.runtime.embedded import ensure_embedded_service

    point = default_entry_point()
    assert point.name == ENTRY_POINT_NAME
    assert point.load() is ensure_embedded_service


def test_every_extension_entry_point_resolves_to_a_factory() -> None:
    from humanwire.mcp.http import McpEndpoint  # the mcp extra, in dev

    points = {point.name: point for point in extensions.extension_entry_points()}
    assert set(points) == {"mcp"}
    assert points["mcp"].load() is McpEndpoint
    assert set(extensions.REQUIREMENTS) <= set(points)  # no requirement of nothing
