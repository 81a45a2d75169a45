"""Top-level test configuration. The service fixtures come from humanwire's own pytest
plugin (``humanwire.testing``), registered by its entry point."""

from __future__ import annotations

import os
import tempfile

pytest_plugins = ["pytester"]

# No test may touch ~/.humanwire or the default port 8765 (several test runs share a
# machine): embedded mode gets a private home and a free port unless told otherwise.
os.environ.setdefault("HUMANWIRE_HOME", tempfile.mkdtemp(prefix="humanwire-home-"))
os.environ.setdefault("HUMANWIRE_EMBEDDED_PORT", "0")
