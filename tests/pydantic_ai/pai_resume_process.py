"""One side of the two-process test (``test_pai_resume_any_process``), run as its own
interpreter. ``pause`` runs the agent until its payment awaits approval, sends the form
and saves the run (its message history as JSON) in a ``FilePausedRunStore``, then exits.
``resume`` is a webhook receiver that never saw the pause: it verifies the delivery and
resumes the run from the event alone. ``replay`` is a host that kept the history and runs
it again with the same decision, past the store (only the ledger stands in its way).

    python pai_resume_process.py pause  DIR BASE_URL API_KEY
    python pai_resume_process.py resume DIR BASE_URL API_KEY BODY_FILE SIGNATURE SECRET
    python pai_resume_process.py replay DIR BASE_URL API_KEY RECORD_FILE INTERACTION_ID

The tool appends a line to DIR/payments.log each time it runs. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pai_helpers import once
from pydantic_ai import Agent, DeferredToolRequests, Tool

from humanwire import AsyncHumanWire
from humanwire.approval import decision_from_values
from humanwire.pydantic_ai import ApprovalGuard, FilePausedRunStore, PausedRun, PausedRuns
from humanwire.pydantic_ai.durable import deferred_results
from humanwire.webhooks import SIGNATURE_HEADER


def build_agent(directory: Path) -> Agent[None, Any]:
    """The same agent in every process: a fresh Agent(...), as a receiver would build it."""

    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        with (directory / "payments.log").open("a", encoding="utf-8") as log:
            log.write(f"{amount} {to}\n")
        return f"sent {amount} to {to}"

    model = once("send_payment", {"amount": 50, "to": "bob"})
    return Agent(
        model.model,
        tools=[Tool(send_payment, requires_approval=True)],
        output_type=[str, DeferredToolRequests],
    )


async def main(argv: list[str]) -> dict[str, Any]:
    mode, directory, base_url, api_key = argv[0], Path(argv[1]), argv[2], argv[3]
    client = AsyncHumanWire(api_key=api_key, base_url=base_url)
    store = FilePausedRunStore(directory / "paused")
    runs = PausedRuns(store, client=client, follow_up_time=120)
    agent = build_agent(directory)
    try:
        if mode == "pause":
            outcome = await runs.run(agent, "Pay Bob 50")
            assert outcome.paused is not None
            (call,) = outcome.paused.pending
            return {
                "run_id": outcome.paused.run_id,
                "interaction_id": call.interaction_id,
                "record": json.dumps(outcome.paused.to_dict()),
            }
        if mode == "resume":
            body = Path(argv[4]).read_bytes()
            headers = {SIGNATURE_HEADER: argv[5]}
            resumed = await runs.resume_from_webhook(agent, body, headers, secret=argv[6])
            if resumed is None:
                return {"resumed": False}
            return {"resumed": True, "finished": resumed.finished, "output": resumed.output}
        # replay: the kept history, the same decision, the shared ledger.
        paused = PausedRun.from_dict(json.loads(Path(argv[4]).read_text(encoding="utf-8")))
        (call,) = paused.pending
        approved = decision_from_values({"decision": "approve"}, interaction_id=argv[5])
        result = await agent.run(
            message_history=paused.history(),
            deferred_tool_results=deferred_results(paused, {call.tool_call_id: approved}),
            capabilities=[ApprovalGuard(store)],
        )
        return {"output": result.output}
    finally:
        await client.aclose()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1:]))))
