"""Service tests. The testing kit's session service (``humanwire_service``, used by the
page tests) runs on each store in turn, as in the integration tests; tests that build
their own engine or app take the ``database`` fixture (``tests/conftest.py``)."""

from __future__ import annotations

from pg_support import humanwire_config

__all__ = ["humanwire_config"]
