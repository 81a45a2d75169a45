"""The app the kill tests run as a process of its own (copied, and edited for a deploy).

``python ship_app.py start <workflow id>``: launches DBOS, starts the workflow, waits.
``python ship_app.py finish <workflow id>``: launches DBOS (which recovers the pending
workflow), waits for its result and prints it with the POSTs this process sent.
Settings come from the environment: HW_BASE_URL, HW_API_KEY, DBOS_URL, DBOS_SCHEMA,
when the version is pinned, DBOS_APP_VERSION, and SHIP_ASYNC=1 for the async workflow
(which a plain ``DBOS.start_workflow`` runs on DBOS's own event loop)."""

from __future__ import annotations

import json
import os
import sys

import httpx
from dbos import DBOS, SetWorkflowID

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire

POSTS: list[str] = []


@DBOS.workflow()
def ship_decision(hours: float) -> str:
    answer = humanwire_dbos.ask(
        to="+12025550100", message="Ship v2 tonight? Reply yes or no.", timeout=hours * 3600
    )
    return f"The human said: {answer}"  # RELEASE-LINE


@DBOS.workflow()
async def ship_decision_async(hours: float) -> str:
    answer = await humanwire_dbos.ask_async(
        to="+12025550100", message="Ship v2 tonight? Reply yes or no.", timeout=hours * 3600
    )
    return f"The human said: {answer}"


def main(command: str, workflow_id: str) -> None:
    http = httpx.Client(
        timeout=30,
        event_hooks={
            "request": [lambda r: POSTS.append(r.url.path) if r.method == "POST" else None]
        },
    )
    humanwire_dbos.configure(
        HumanWire(
            api_key=os.environ["HW_API_KEY"], base_url=os.environ["HW_BASE_URL"], http_client=http
        )
    )
    config: dict[str, object] = {
        "name": "ship",
        "system_database_url": os.environ["DBOS_URL"],
        "dbos_system_schema": os.environ["DBOS_SCHEMA"],
        "log_level": "WARNING",
    }
    if os.environ.get("DBOS_APP_VERSION"):
        config["application_version"] = os.environ["DBOS_APP_VERSION"]
    DBOS(config=config)  # type: ignore[arg-type]
    DBOS.launch()
    if command == "start":
        workflow = ship_decision_async if os.environ.get("SHIP_ASYNC") else ship_decision
        with SetWorkflowID(workflow_id):
            DBOS.start_workflow(workflow, 72.0)
        print("started", flush=True)
        DBOS.retrieve_workflow(workflow_id).get_result()  # killed before it returns
    else:
        result = DBOS.retrieve_workflow(workflow_id).get_result()
        print(json.dumps({"result": result, "posts": POSTS}), flush=True)
    sys.stdout.flush()
    os._exit(0)  # DBOS's background threads need no orderly end here


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
