"""The deploy guard: DBOS recovers a workflow only under the application version it started
with, and that version is, unless pinned, a hash of the workflows' source, so any code edit
strands every wait begun before the deploy. Each helper that waits checks first
(``check_version``): it warns, or with ``require_pinned_version`` refuses before it sends.

Whether the version was pinned or computed, DBOS does not say: ``DBOS.application_version``
is public, how it came about is not (dbos 3.4, the newest release, has no such call; the
config it was set from stays inside DBOS too). So :func:`computed_version` asks DBOS's
internals for the version it would compute, and it is the one place in humanwire that does:
``tests/dbos/test_dbos_private_api.py`` calls it directly and fails when they move. Should
they move in a release the tests have not met, the guard tells a computed version by its
form (an MD5 hex digest, or ``DEFAULT_VERSION-<name>``) and logs that it does.
"""

from __future__ import annotations

import logging
import warnings

from dbos import DBOS

from ._steps import STEP_CLIENT

__all__ = [
    "VERSION_GUARD",
    "UnpinnedVersionError",
    "UnpinnedVersionWarning",
    "VersionGuard",
    "check_version",
    "computed_version",
    "looks_computed",
    "version_pinned",
]

log = logging.getLogger(__name__)


class UnpinnedVersionWarning(UserWarning):
    """A humanwire wait begins under DBOS's computed application version."""


class UnpinnedVersionError(RuntimeError):
    """``require_pinned_version``: a wait would begin under a computed version."""


_UNPINNED = (
    "DBOS's application version {version!r} is computed from the workflows' source: after "
    "any code edit, DBOS will not recover this workflow, so a human's answer that comes "
    "after a deploy never reaches it. Pin it: DBOSConfig(application_version=...) or "
    'DBOS__APPVERSION (docs/guides/dbos.md, "Limits and pitfalls").'
)


def computed_version() -> str:
    """The application version DBOS computes from the registered workflows, as
    ``DBOS.launch()`` computes it when none is set (its registry's
    ``compute_app_version``). DBOS's internals: raises whatever their move raises
    (``ImportError``, ``AttributeError``, ``TypeError``...)."""
    from dbos._dbos import _get_dbos_instance
    from dbos._utils import GlobalParams

    registry = _get_dbos_instance()._registry
    return str(registry.compute_app_version(GlobalParams.app_name or ""))


def looks_computed(version: str) -> bool:
    """Whether ``version`` has the form of one DBOS computes: an MD5 hex digest, or
    ``DEFAULT_VERSION-<app name>`` (the source could not be read)."""
    return version.startswith("DEFAULT_VERSION") or (
        len(version) == 32 and all(c in "0123456789abcdef" for c in version)
    )


class VersionGuard:
    """Tells a pinned application version from a computed one (once per version) and
    warns or refuses when a wait would begin under a computed one."""

    def __init__(self) -> None:
        self._pinned: dict[str, bool] = {}
        self._warned: set[str] = set()
        self._internals_moved = False

    def pinned(self) -> bool | None:
        """Whether DBOS's application version was set (``application_version``,
        ``DBOS__APPVERSION``) rather than computed; None when DBOS has not launched."""
        version = DBOS.application_version
        if not version:
            return None
        known = self._pinned.get(version)
        if known is not None:
            return known
        try:
            pinned = version != computed_version()
        except Exception as exc:  # DBOS's internals moved: tell by the version's form
            if not self._internals_moved:
                self._internals_moved = True
                log.warning(
                    "humanwire.dbos cannot ask this DBOS for its computed application "
                    "version (%s: %s); it tells a computed version by its form instead",
                    type(exc).__name__,
                    exc,
                )
            pinned = not looks_computed(version)
        self._pinned[version] = pinned
        return pinned

    def check(self) -> None:
        """Warns (or, with ``require_pinned_version``, raises) when a wait begins under a
        computed application version. Runs before the step, so a refusal sends nothing."""
        if self.pinned() is not False:
            return
        version = DBOS.application_version
        message = _UNPINNED.format(version=version)
        if STEP_CLIENT.require_pinned_version:
            raise UnpinnedVersionError(message)
        if version not in self._warned:  # the log once per version; the warning per filters
            self._warned.add(version)
            log.warning(message)
        warnings.warn(message, UnpinnedVersionWarning, stacklevel=5)


VERSION_GUARD = VersionGuard()


def version_pinned() -> bool | None:
    """Whether DBOS's application version was set (``application_version``,
    ``DBOS__APPVERSION``) rather than computed; None when DBOS has not launched."""
    return VERSION_GUARD.pinned()


def check_version() -> None:
    """The guard every waiting helper runs before it sends (see :class:`VersionGuard`)."""
    VERSION_GUARD.check()
