"""One side of the two-process durable approval test (``test_oa_durable.py``), run as its own
interpreter: ``pause`` runs the agent until its payment waits for approval, saves the run
and exits; ``resume`` is a webhook receiver that never saw the pause: it verifies the
delivery and resumes the run from the event alone.

    python oa_resume_process.py pause  STORE BASE_URL API_KEY RAN_FILE
    python oa_resume_process.py resume STORE BASE_URL API_KEY RAN_FILE BODY_FILE SIGNATURE SECRET

The payment tool appends a line to RAN_FILE each time it runs. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from agents import Agent, function_tool
from oa_helpers import FakeModel

from humanwire import AsyncHumanWire
from humanwire.openai_agents import (
    FilePausedRunStore,
    require_approval,
    resume_from_webhook,
    run_until_approval,
)


def build_agent(client: AsyncHumanWire, ran_file: Path) -> Agent[None]:
    @function_tool
    async def send_payment(amount: int, to: str) -> str:
        """Send money."""
        with ran_file.open("a", encoding="utf-8") as ran:
            ran.write(f"{amount} {to}\n")
        return f"sent {amount} to {to}"

    gated = require_approval(send_payment, client=client, follow_up_time=120)
    model = FakeModel(("send_payment", {"amount": 50, "to": "bob"}))
    return Agent(name="payer", tools=[gated], model=model)


async def main(argv: list[str]) -> None:
    mode, store_dir, base_url, api_key, ran_file = argv[:5]
    client = AsyncHumanWire(api_key=api_key, base_url=base_url)
    agent = build_agent(client, Path(ran_file))
    store = FilePausedRunStore(store_dir)
    if mode == "pause":
        outcome = await run_until_approval(agent, "pay bob 50", store)
        [pending] = outcome.paused
        print(json.dumps({"run_id": outcome.run_id, "interaction_id": pending.interaction_id}))
        return
    body_file, signature, secret = argv[5:8]
    resumed = await resume_from_webhook(
        agent,
        store,
        Path(body_file).read_bytes(),
        {"Humanwire-Signature": signature},
        secret=secret,
        client=client,
    )
    if resumed is None:
        print(json.dumps({"resumed": False}))
        return
    print(json.dumps({"resumed": True, "final": resumed.final_output}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
