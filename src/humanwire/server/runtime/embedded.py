"""The embedded service: what the client talks to when no base URL is configured.

``ensure_embedded_service()`` returns the address and API key of a humanwire service on
this machine, starting one in this process when none is listening. State lives in
``$HUMANWIRE_HOME`` (default ``~/.humanwire``):

- ``embedded.db``: the SQLite database of the in-process service;
- ``embedded.json``: ``{"base_url", "api_key"}`` of the service last started or used.

A service already listening at the recorded address (or the default one,
``http://127.0.0.1:8765``; ``HUMANWIRE_EMBEDDED_PORT`` overrides the port) is reused when
``GET /healthz`` answers ``{"status": "ok"}`` and the recorded key is accepted — so a
``humanwire serve`` or another notebook's service on the same home is shared. Otherwise
one starts in this process on loopback (the preferred port, or a free one when that is
taken), and stops when the interpreter exits. The key is created on first use and kept,
so it stays the same across runs.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from ..http.startup import StartupAccount
    from .runner import ServiceRunner

__all__ = [
    "DEFAULT_EMBEDDED_PORT",
    "EmbeddedService",
    "embedded_home",
    "ensure_embedded_service",
    "record_embedded_service",
    "stop_embedded_service",
]

logger = logging.getLogger("humanwire")

DEFAULT_EMBEDDED_PORT = 8765
HOME_ENV = "HUMANWIRE_HOME"
PORT_ENV = "HUMANWIRE_EMBEDDED_PORT"
_PROBE_TIMEOUT = 2.0
_ACCOUNT_NAME = "embedded"


@dataclass(frozen=True)
class EmbeddedService:
    base_url: str
    api_key: str
    inbox_url: str
    in_process: bool = False
    """True when this process runs the service (it stops at interpreter exit)."""


_lock = threading.Lock()
_service: EmbeddedService | None = None
_runner: ServiceRunner | None = None
_announced: set[tuple[str, str]] = set()


def embedded_home() -> Path:
    return Path(os.environ.get(HOME_ENV) or "~/.humanwire").expanduser()


def _preferred_port() -> int:
    raw = os.environ.get(PORT_ENV)
    if not raw:
        return DEFAULT_EMBEDDED_PORT
    try:
        port = int(raw)
    except ValueError:
        raise ValueError(f"{PORT_ENV} must be a port number, got {raw!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{PORT_ENV} must be a port number, got {raw!r}")
    return port


def ensure_embedded_service() -> EmbeddedService:
    """The embedded service of this process: reused when already running here or
    listening on this machine, started in-process otherwise. Thread-safe."""
    global _service
    with _lock:
        if _service is not None and _still_usable(_service):
            return _service
        home = embedded_home()
        home.mkdir(parents=True, exist_ok=True)
        with _file_lock(home / "embedded.lock"):
            service = _find_or_start(home)
        _service = service
        _announce(service)
        return service


def record_embedded_service(base_url: str, api_key: str) -> None:
    """Records a service for embedded mode to reuse (``humanwire serve`` on the home's
    database calls it)."""
    home = embedded_home()
    home.mkdir(parents=True, exist_ok=True)
    _write_state(home / "embedded.json", {"base_url": base_url, "api_key": api_key})


def stop_embedded_service() -> None:
    """Stops the service this process started (if any) and forgets the singleton, so
    the next ``ensure_embedded_service()`` looks again. Called at interpreter exit."""
    global _service, _runner
    with _lock:
        runner, _runner, _service = _runner, None, None
    if runner is not None:
        runner.stop()


atexit.register(stop_embedded_service)


def _still_usable(service: EmbeddedService) -> bool:
    if service.in_process:
        return _runner is not None and _runner.running
    # Another process's service may have gone away since.
    return _probe(service.base_url, service.api_key) == "ok"


def _find_or_start(home: Path) -> EmbeddedService:
    state = _read_state(home / "embedded.json")
    recorded_url = state.get("base_url")
    recorded_key = state.get("api_key")
    port = _preferred_port()

    candidates: list[str] = []
    if isinstance(recorded_url, str):
        candidates.append(recorded_url.rstrip("/"))
    if port:
        default_url = f"http://127.0.0.1:{port}"
        if default_url not in candidates:
            candidates.append(default_url)

    if isinstance(recorded_key, str):
        for url in candidates:
            if _probe(url, recorded_key) == "ok":
                logger.debug("humanwire: reusing the service listening at %s", url)
                return EmbeddedService(url, recorded_key, f"{url}/inbox")

    from ..http.startup import StartupAccount

    # Keep a recorded key (the database may have been deleted) so notebooks and shells
    # that saved it keep working; otherwise create one. Made before the service answers.
    account = StartupAccount(_ACCOUNT_NAME, recorded_key if isinstance(recorded_key, str) else None)
    runner = _start_runner(home, port, account)
    key = account.key
    global _runner
    _runner = runner
    _write_state(home / "embedded.json", {"base_url": runner.base_url, "api_key": key})
    return EmbeddedService(runner.base_url, key, f"{runner.base_url}/inbox", in_process=True)


def _start_runner(home: Path, port: int, account: StartupAccount) -> ServiceRunner:
    from ..config import ServiceConfig
    from .runner import ServiceRunner

    def make(port: int) -> ServiceRunner:
        config = ServiceConfig(db_path=str(home / "embedded.db"), local_mode=True)
        return ServiceRunner(config, "127.0.0.1", port, before_serving=[account])

    try:
        return make(port).start()
    except OSError:
        if port == 0:
            raise
        logger.info("humanwire: port %d is busy, using a free port", port)
        return make(0).start()


def _probe(base_url: str, api_key: str) -> str:
    """``ok`` (a humanwire service accepting the key), ``other_key`` (humanwire, but the
    key is refused) or ``absent``."""
    try:
        with httpx.Client(base_url=base_url, timeout=_PROBE_TIMEOUT, trust_env=False) as http:
            health = http.get("/healthz")
            if health.status_code != 200 or _json(health) != {"status": "ok"}:
                return "absent"
            numbers = http.get("/numbers", headers={"Authorization": f"Bearer {api_key}"})
    except httpx.HTTPError:
        return "absent"
    return "ok" if numbers.status_code == 200 else "other_key"


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(path: Path, state: dict[str, str]) -> None:
    # Atomic replace, readable by the owner only: the file holds an API key.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".embedded-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=2)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serializes processes starting an embedded service on the same home (POSIX)."""
    try:
        import fcntl
    except ImportError:  # Windows: the in-process lock is all there is
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _announce(service: EmbeddedService) -> None:
    marker = (service.base_url, service.api_key)
    if marker in _announced:
        return
    _announced.add(marker)
    logger.info(
        "humanwire: embedded service at %s — inbox: %s (key: %s)",
        service.base_url,
        service.inbox_url,
        service.api_key,
    )
    print(
        f"humanwire: embedded service at {service.base_url} — inbox: {service.inbox_url} "
        f"(key: {service.api_key})",
        file=sys.stderr,
        flush=True,
    )
