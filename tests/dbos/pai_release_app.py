"""The Pydantic AI release agent (``pai_release_agent.py``) as a process of its own, for
the test that kills it mid-wait.

``python pai_release_app.py start <workflow id>``: launches DBOS, starts the agent's run,
waits (killed before it returns). ``python pai_release_app.py finish <workflow id>``:
launches DBOS, which recovers the pending run, waits for its result and prints it with
how many requests this process's model answered. Settings come from the environment:
HW_BASE_URL, HW_API_KEY, DBOS_URL, DBOS_SCHEMA."""

from __future__ import annotations

import json
import os
import sys

from dbos import DBOS, SetWorkflowID
from pai_release_agent import MODEL_CALLS, run_release

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire


def main(command: str, workflow_id: str) -> None:
    humanwire_dbos.configure(
        HumanWire(api_key=os.environ["HW_API_KEY"], base_url=os.environ["HW_BASE_URL"])
    )
    DBOS(
        config={
            "name": "release",
            "system_database_url": os.environ["DBOS_URL"],
            "dbos_system_schema": os.environ["DBOS_SCHEMA"],
            "log_level": "WARNING",
            "application_version": "release-1",  # pinned: the wait outlives the process
        }
    )
    DBOS.launch()  # "finish": recovers the run the killed process left waiting
    if command == "start":
        with SetWorkflowID(workflow_id):
            DBOS.start_workflow(run_release, "Release v2 if the on-call human agrees.")
        print("started", flush=True)
        DBOS.retrieve_workflow(workflow_id).get_result()  # killed before it returns
    else:
        result = DBOS.retrieve_workflow(workflow_id).get_result()
        print(json.dumps({"result": result, "model_calls": len(MODEL_CALLS)}), flush=True)
    sys.stdout.flush()
    os._exit(0)  # DBOS's background threads need no orderly end here


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
