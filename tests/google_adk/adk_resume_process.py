"""One side of the two-process durable approval test (``test_adk_durable.py``), run as its
own interpreter: ``pause`` runs the agent until its payment waits for approval (the
session in SQLite holds the pause) and exits; ``resume`` is a webhook receiver that never
saw the pause: it verifies the delivery and resumes the session from the event alone.

    python adk_resume_process.py pause  DB BASE_URL API_KEY RAN_FILE CLAIMS
    python adk_resume_process.py resume DB BASE_URL API_KEY RAN_FILE CLAIMS BODY SIGNATURE SECRET

The payment tool appends a line to RAN_FILE each time it runs. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from adk_helpers import FakeLlm, user_text
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from humanwire import AsyncHumanWire
from humanwire.google_adk import (
    FileClaimStore,
    require_approval,
    resume_from_webhook,
    run_until_approval,
)


def build_runner(db: str, client: AsyncHumanWire, ran_file: Path) -> Runner:
    async def send_payment(amount: int, to: str) -> str:
        """Send money."""
        with ran_file.open("a", encoding="utf-8") as ran:
            ran.write(f"{amount} {to}\n")
        return f"sent {amount} to {to}"

    gated = require_approval(send_payment, client=client, follow_up_time=120)
    model = FakeLlm.script(("send_payment", {"amount": 50, "to": "bob"}))
    agent = LlmAgent(name="payer", model=model, tools=[gated])
    return Runner(app_name="payments", agent=agent, session_service=SqliteSessionService(db))


async def main(argv: list[str]) -> None:
    mode, db, base_url, api_key, ran_file, claims = argv[:6]
    client = AsyncHumanWire(api_key=api_key, base_url=base_url)
    runner = build_runner(db, client, Path(ran_file))
    if mode == "pause":
        session = await runner.session_service.create_session(app_name="payments", user_id="u1")
        outcome = await run_until_approval(
            runner, user_id="u1", session_id=session.id, new_message=user_text("pay bob 50")
        )
        [pending] = outcome.paused
        print(json.dumps({"session_id": session.id, "interaction_id": pending.interaction_id}))
        return
    body_file, signature, secret = argv[6:9]
    resumed = await resume_from_webhook(
        runner,
        FileClaimStore(claims),
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
