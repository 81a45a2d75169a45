"""One side of the two-process workflow test (run by ``framework_support.run_process``):
``start <dir> <base_url> <api_key>`` runs the workflow until it asks a person and exits;
``resume <dir> <base_url> <api_key>`` builds it afresh and runs it on from its latest
checkpoint in ``<dir>/checkpoints``. The last line printed is a JSON object."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agent_framework import FileCheckpointStorage
from agent_framework_helpers import asking_workflow

from framework_support import PHONE
from humanwire import AsyncHumanWire
from humanwire.agent_framework import HumanRequests


async def main(command: str, directory: Path, base_url: str, api_key: str) -> dict[str, Any]:
    client = AsyncHumanWire(api_key=api_key, base_url=base_url)
    try:
        people = HumanRequests(client=client, to=PHONE, follow_up_time=120)
        checkpoints = directory / "checkpoints"
        workflow = asking_workflow(directory / "answers.log", checkpoints)
        if command == "start":
            result = await people.start(workflow, "v2")
            return {"pending": len(result.get_request_info_events())}
        storage = FileCheckpointStorage(str(checkpoints))
        resumed = await people.resume(workflow, storage)
        if resumed is None:
            return {"resumed": False}
        return {"resumed": True, "outputs": resumed.get_outputs()}
    finally:
        await client.aclose()


if __name__ == "__main__":
    command, directory, base_url, api_key = sys.argv[1:]
    print(json.dumps(asyncio.run(main(command, Path(directory), base_url, api_key))))
