"""One side of the two-process test (``test_strands_resume_any_process``), run as its own
interpreter. ``pause`` runs the agent until its payment awaits approval; ``PausedRuns``
sends the form and saves the pause, Strands' ``FileSessionManager`` the agent; the
process exits. ``resume`` is a webhook receiver that never saw the pause: it verifies the
delivery and resumes the session's agent from the event alone. ``replay`` is a host that
kept a copy of the paused session and answers its interrupt again with the same decision,
past the store (only the consumed approval stands in its way).

    python strands_resume_process.py pause  DIR BASE_URL API_KEY
    python strands_resume_process.py resume DIR BASE_URL API_KEY BODY_FILE SIGNATURE SECRET
    python strands_resume_process.py replay DIR BASE_URL API_KEY INTERRUPT_ID INTERACTION_ID

The tool appends a line to DIR/payments.log each time it runs. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from strands import Agent, tool
from strands.session.file_session_manager import FileSessionManager
from strands_helpers import agent, final, once

from humanwire import AsyncHumanWire
from humanwire._pauses import decision_to_dict
from humanwire.approval import decision_from_values
from humanwire.strands import FilePausedRunStore, HumanWireApprovals, PausedRuns
from humanwire.webhooks import SIGNATURE_HEADER

SESSION = "pay-bob"


def agent_builder(directory: Path, sessions: str) -> Any:
    """The same agent in every process, built afresh for the session."""

    @tool
    def send_payment(amount: int, to: str) -> str:
        """Send money."""
        with (directory / "payments.log").open("a", encoding="utf-8") as log:
            log.write(f"{amount} {to}\n")
        return f"sent {amount} to {to}"

    def agent_for(session_id: str) -> Agent:
        return agent(
            once("send_payment", {"amount": 50, "to": "bob"}),
            [send_payment],
            hooks=[HumanWireApprovals(["send_payment"], pause=True)],
            session_manager=FileSessionManager(session_id, storage_dir=str(directory / sessions)),
        )

    return agent_for


async def main(argv: list[str]) -> dict[str, Any]:
    mode, directory, base_url, api_key = argv[0], Path(argv[1]), argv[2], argv[3]
    client = AsyncHumanWire(api_key=api_key, base_url=base_url)
    store = FilePausedRunStore(directory / "paused")
    sessions = "kept-sessions" if mode == "replay" else "sessions"
    runs = PausedRuns(store, agent_builder(directory, sessions), client=client, window=120)
    try:
        if mode == "pause":
            outcome = await runs.run(SESSION, "Pay Bob 50")
            assert outcome.paused is not None
            (pending,) = outcome.paused.pending
            return {
                "stop_reason": outcome.result.stop_reason,
                "interrupt_id": pending.interrupt_id,
                "interaction_id": pending.interaction_id,
            }
        if mode == "resume":
            body = Path(argv[4]).read_bytes()
            headers = {SIGNATURE_HEADER: argv[5]}
            resumed = await runs.resume_from_webhook(body, headers, secret=argv[6])
            if resumed is None:
                return {"resumed": False}
            return {"resumed": True, "finished": resumed.finished, "text": resumed.text}
        # replay: the kept session, the same decision, the shared ledger (the store).
        interrupt_id, interaction_id = argv[4], argv[5]
        approved = decision_from_values({"decision": "approve"}, interaction_id=interaction_id)
        kept = runs.agent_for(SESSION)
        answer = [
            {
                "interruptResponse": {
                    "interruptId": interrupt_id,
                    "response": decision_to_dict(approved),
                }
            }
        ]
        result = await kept.invoke_async(answer, invocation_state=runs.invocation_state())
        return {"text": final(result)}
    finally:
        await client.aclose()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1:]))))
