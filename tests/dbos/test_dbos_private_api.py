"""The one place humanwire uses DBOS's internals: ``computed_version()`` (DBOS has no
public call telling a pinned application version from the one it computes). Called
here directly, with no fallback, so a DBOS release that moves them fails this test by
name, rather than humanwire quietly falling back to the version's form. Real DBOS on a
SQLite file."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS

from humanwire.dbos import _version
from humanwire.dbos._version import VersionGuard, computed_version, looks_computed


def _launch(tmp_path: Path, **config: Any) -> None:
    DBOS(
        config={  # type: ignore[arg-type]
            "name": "humanwire-dbos-private-api",
            "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
            "log_level": "WARNING",
            **config,
        }
    )
    DBOS.launch()


@pytest.fixture
def unpinned(tmp_path: Path) -> Iterator[None]:
    _launch(tmp_path)
    try:
        yield
    finally:
        DBOS.destroy()


@pytest.fixture
def pinned(tmp_path: Path) -> Iterator[None]:
    _launch(tmp_path, application_version="humanwire-private-api-1")
    try:
        yield
    finally:
        DBOS.destroy()


def test_dbos_still_computes_its_version_where_humanwire_asks(unpinned: None) -> None:
    # If this fails, DBOS moved its internals (dbos._dbos._get_dbos_instance, its
    # _registry.compute_app_version, dbos._utils.GlobalParams.app_name): find where they
    # went, or a public call, and mend humanwire.dbos._version.computed_version.
    assert computed_version() == DBOS.application_version
    assert looks_computed(DBOS.application_version)
    assert VersionGuard().pinned() is False


def test_a_pinned_version_is_not_the_computed_one(pinned: None) -> None:
    assert DBOS.application_version == "humanwire-private-api-1"
    assert looks_computed(computed_version())
    assert VersionGuard().pinned() is True


def test_should_the_internals_move_the_guard_tells_by_the_form_and_says_so(
    unpinned: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def moved() -> str:
        raise AttributeError("'DBOS' object has no attribute '_registry'")

    monkeypatch.setattr(_version, "computed_version", moved)
    with caplog.at_level(logging.WARNING, logger=_version.__name__):
        assert VersionGuard().pinned() is False  # an MD5 digest: computed
    assert "cannot ask this DBOS for its computed application version" in caplog.text
    assert not looks_computed("humanwire-private-api-1")
