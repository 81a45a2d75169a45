"""Fixtures of the CrewAI adapter tests (run apart: ``scripts/test-isolated crewai``).

CrewAI is configured here, before any test module imports it, and every subprocess
inherits it: offline, each process would stall about ten seconds on telemetry and
tracing, and its storage would land in the user's data directory."""

from __future__ import annotations

import os
import tempfile

import pytest

from framework_support import ada, clean_environment, service_environment

__all__ = ["ada", "clean_environment", "service_environment"]

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("CREWAI_DISABLE_VERSION_CHECK", "true")
# An absolute path: CrewAI's storage (memory, default flow states) goes there.
os.environ.setdefault("CREWAI_STORAGE_DIR", tempfile.mkdtemp(prefix="crewai-storage-"))


def pytest_configure(config: pytest.Config) -> None:
    # CrewAI warns about its own deprecated fields as it builds every crew: noise here.
    config.addinivalue_line("filterwarnings", r"ignore::DeprecationWarning:crewai\.")
