"""A humanwire service for a test session: loopback, a temporary database, fast timings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from humanwire.server.config import ServiceConfig
    from humanwire.server.runtime.runner import ServiceRunner

__all__ = ["RunningService", "fast_config", "start_test_service"]


def fast_config(db_path: str | Path) -> ServiceConfig:
    """The service configuration tests run against: webhook retries in tens of
    milliseconds, a short delivery timeout, a rate limit no test reaches, and no bound on
    connections per address (every test's clients connect from loopback, to one service
    for the whole session)."""
    from humanwire.server.config import ServiceConfig

    return ServiceConfig(
        db_path=str(db_path),
        local_mode=True,
        sandbox_enabled=True,
        webhook_retry_base=0.05,
        webhook_timeout=2.0,
        rate_limit_requests=1_000_000,
        max_connections_per_address=0,
    )


@dataclass
class RunningService:
    """The service a test talks to."""

    runner: ServiceRunner

    @property
    def base_url(self) -> str:
        return self.runner.base_url

    @property
    def config(self) -> ServiceConfig:
        return self.runner.config

    @property
    def inbox_url(self) -> str:
        return f"{self.base_url}/inbox"

    def create_account(self, name: str | None = None) -> str:
        """A new account; returns its API key. Accounts never see each other's data."""
        return self.runner.create_account(name)

    def stop(self) -> None:
        self.runner.stop()


def start_test_service(db_path: str | Path, config: ServiceConfig | None = None) -> RunningService:
    """Starts the service on a free loopback port (``fast_config`` unless given)."""
    from humanwire.server.runtime.runner import ServiceRunner

    runner = ServiceRunner(config or fast_config(db_path), "127.0.0.1", 0)
    runner.start()
    return RunningService(runner)
