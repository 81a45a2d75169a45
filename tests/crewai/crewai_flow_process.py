"""One side of the two-process test (``test_crewai_resume_any_process``), run as its own
interpreter. ``pause`` kicks the payment flow off until it waits for approval (the form
sent, the flow saved in ``DIR/flows.db``) and exits; ``resume`` is a webhook receiver
that never saw the pause: it verifies the delivery and resumes the flow from the event.

    python crewai_flow_process.py pause  DIR BASE_URL API_KEY
    python crewai_flow_process.py resume DIR BASE_URL API_KEY BODY_FILE SIGNATURE SECRET

The flow's payment step appends a line to DIR/paid.txt. Prints one JSON line, last.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from crewai.flow import HumanFeedbackPending
from crewai.flow.persistence.sqlite import SQLiteFlowPersistence
from crewai_flows import payment_flow

from humanwire import HumanWire
from humanwire.crewai import HumanWireFeedback, resume_from_webhook
from humanwire.webhooks import SIGNATURE_HEADER


def main(argv: list[str]) -> dict[str, Any]:
    mode, directory, base_url, api_key = argv[0], Path(argv[1]), argv[2], argv[3]
    client = HumanWire(api_key=api_key, base_url=base_url)
    provider = HumanWireFeedback(client=client, follow_up_time=120)
    flow_class = payment_flow(provider, directory / "paid.txt")
    persistence = SQLiteFlowPersistence(str(directory / "flows.db"))
    if mode == "pause":
        paused = flow_class(persistence=persistence).kickoff()
        assert isinstance(paused, HumanFeedbackPending)
        return {
            "flow_id": paused.context.flow_id,
            "interaction_id": paused.callback_info["interaction_id"],
        }
    body = Path(argv[4]).read_bytes()
    headers = {SIGNATURE_HEADER: argv[5]}
    resumed = resume_from_webhook(
        body, headers, flow_class, persistence, secret=argv[6], client=client
    )
    if resumed is None:
        return {"resumed": False}
    return {"resumed": True, "paused": resumed.paused, "result": resumed.result}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
