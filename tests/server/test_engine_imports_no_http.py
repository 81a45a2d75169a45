"""The engine is the domain: importing it loads no HTTP framework or server (the routes,
the middleware and ``GET /metrics`` are the HTTP layer's, around it)."""

from __future__ import annotations

import json
import subprocess
import sys

HTTP = ("starlette", "uvicorn", "h11", "httptools", "websockets")


def test_importing_the_engine_loads_no_http_framework() -> None:
    script = (
        "import json, sys\n"
        "import humanwire.server.engine\n"
        "import humanwire.server.telemetry\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stdout)
    assert "humanwire.server.engine.facade" in loaded  # it did import the engine
    http = [name for name in loaded if name.split(".")[0] in HTTP]
    assert http == [], f"the engine pulled in {http}"
    assert "humanwire.server.http.middleware" not in loaded
    assert "humanwire.server.http.app" not in loaded
