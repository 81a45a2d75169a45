"""Fixtures of the Microsoft Agent Framework adapter tests: those every framework folder shares
(``tests/framework_support.py``)."""

from __future__ import annotations

from framework_support import ada, clean_environment, service_environment

__all__ = ["ada", "clean_environment", "service_environment"]
