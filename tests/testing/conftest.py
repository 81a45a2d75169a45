"""Tests of the testing kit. Its session service (``humanwire_service``, used by the
scripted-human tests) runs on each store in turn, as in the integration tests."""

from __future__ import annotations

from pg_support import humanwire_config

__all__ = ["humanwire_config"]
