"""Fixtures of the Google ADK adapter tests: those every framework folder shares
(``tests/framework_support.py``), and ADK's log line about usage metadata (a scripted
model has none) kept out of the output."""

from __future__ import annotations

import logging

from framework_support import ada, clean_environment, service_environment

__all__ = ["ada", "clean_environment", "service_environment"]

# "Skipping missing token usage metadata for agent ... and model ...", once per model call.
logging.getLogger("google_adk.google.adk.telemetry._metrics").setLevel(logging.ERROR)
