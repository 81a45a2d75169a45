"""Twilio's status work (hanging up, releasing a bought number): the shared
``ProviderJobs`` over Twilio's REST calls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..jobs import ProviderJobs
from .rest import TwilioAPIError, TwilioREST

if TYPE_CHECKING:
    from ...background.schedule import Schedule
    from ..port import ProviderState

__all__ = ["JOB_SCOPE", "TwilioJobs"]

JOB_SCOPE = "twilio-jobs"


class TwilioJobs(ProviderJobs):
    def __init__(
        self,
        rest: TwilioREST,
        store: ProviderState,
        *,
        schedule: Schedule | None = None,
        first_delay: float = 1.0,
        max_delay: float = 300.0,
        max_attempts: int = 12,
    ) -> None:
        self.rest = rest
        super().__init__(
            store,
            scope=JOB_SCOPE,
            label="Twilio",
            do=self._twilio,
            error=TwilioAPIError,
            schedule=schedule,
            first_delay=first_delay,
            max_delay=max_delay,
            max_attempts=max_attempts,
        )

    async def _twilio(self, kind: str, sid: str) -> None:
        if kind == "hang_up":
            await self.rest.update_call(sid, {"Status": "completed"})
        elif kind == "release_number":
            await self.rest.release_number(sid)
