"""One side of the two-process Microsoft Agent Framework tests (run by
``framework_support.run_process``): a process that pauses an agent run at its approval
request and exits, or one that never saw it and runs it on from the saved session.

``pause <dir> <base_url> <api_key>``: start, the session saved in ``<dir>/sessions``
and a copy in ``<dir>/copy.json``; ``webhook <dir> <base_url> <api_key> <body_file>
<signature> <secret>``; ``copy <dir> <base_url> <api_key>``: resume the copy (as a host
holding its own copy of the session would). The last line printed is a JSON object."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agent_framework_helpers import agent, gated_tools, once

from framework_support import PAY, PHONE
from humanwire import AsyncHumanWire
from humanwire.agent_framework import HumanApprovals
from humanwire.webhooks import SIGNATURE_HEADER


async def main(
    command: str, directory: Path, base_url: str, api_key: str, *rest: str
) -> dict[str, Any]:
    client = AsyncHumanWire(api_key=api_key, base_url=base_url)
    try:
        humans = HumanApprovals(
            client=client, to=PHONE, follow_up_time=120, store=directory / "sessions"
        )
        built = agent(once(*PAY), gated_tools(directory / "payments.log"))
        if command == "pause":
            session = built.create_session(session_id="session-1")
            response = await humans.start(built, "Pay Bob 50", session=session)
            (directory / "copy.json").write_text(json.dumps(session.to_dict()), "utf-8")
            return {"paused": bool(response.user_input_requests), "text": response.text}
        if command == "webhook":
            body_file, signature, secret = rest
            body = Path(body_file).read_bytes()
            resumed = await humans.resume_from_webhook(
                built, body, {SIGNATURE_HEADER: signature}, secret=secret
            )
        else:
            copy = json.loads((directory / "copy.json").read_text("utf-8"))
            resumed = await HumanApprovals(client=client, to=PHONE).resume(built, copy)
        if resumed is None:
            return {"resumed": False}
        return {"resumed": True, "text": resumed.text}
    finally:
        await client.aclose()


if __name__ == "__main__":
    command, directory, base_url, api_key, *rest = sys.argv[1:]
    print(json.dumps(asyncio.run(main(command, Path(directory), base_url, api_key, *rest))))
