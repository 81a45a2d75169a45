# The workflow of docs/guides/temporal.md, verbatim (tests/temporal checks the page holds it).
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from humanwire import temporal as humanwire_temporal


@workflow.defn
class ShipDecision:
    @workflow.run
    async def run(self, hours: float) -> str:
        answer = await humanwire_temporal.ask(
            to="+12025550100",
            message="Ship v2 tonight? Reply yes or no.",
            timeout=timedelta(hours=hours),
        )
        return f"The human said: {answer}"
