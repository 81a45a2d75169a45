"""One side of the two-process Claude Agent SDK tests (run by
``framework_support.run_process``): a process whose ``PreToolUse`` hook defers the
payment and exits, or one that never saw it and resumes the CLI session
(``resume=session_id``, no new prompt) with the person's decision. Each process runs its
own fake Messages API (the scripted model reads only the conversation it is sent) and the
bundled CLI, with the same HOME and cwd (the CLI's transcript) and the same pause store.

``pause <dir> <base_url> <api_key>``; ``resume <dir> <base_url> <api_key> <session_id>``;
``webhook <dir> <base_url> <api_key> <body_file> <signature> <secret>``. The last line
printed is a JSON object."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from claude_helpers import FakeMessagesAPI, once, options, pay_server

from framework_support import PAY, PHONE
from humanwire import AsyncHumanWire
from humanwire.claude_agent_sdk import HumanApprovals, run_session
from humanwire.webhooks import SIGNATURE_HEADER


async def main(
    command: str, directory: Path, base_url: str, api_key: str, *rest: str
) -> dict[str, Any]:
    client = AsyncHumanWire(api_key=api_key, base_url=base_url)
    try:
        gate = HumanApprovals(
            ["send_payment"],
            client=client,
            to=PHONE,
            follow_up_time=120,
            pause=True,
            store=directory / "pauses",
        )
        with FakeMessagesAPI(once(*PAY)) as api:
            opts = options(
                api, directory, mcp_servers={"pay": pay_server(directory / "payments.log")}
            )
            if command == "pause":
                result = await run_session(gate.options(opts), "Pay Bob 50")
                assert result is not None
                return {
                    "terminal_reason": getattr(result, "terminal_reason", None),
                    "session_id": result.session_id,
                    "paused": gate.paused(result.session_id) is not None,
                }
            if command == "webhook":
                body_file, signature, secret = rest
                body = Path(body_file).read_bytes()
                resumed = await gate.resume_from_webhook(
                    opts, body, {SIGNATURE_HEADER: signature}, secret=secret
                )
            else:
                (session_id,) = rest
                resumed = await gate.resume(session_id, opts, timeout=10)
        if resumed is None:
            return {"resumed": False}
        return {"resumed": True, "result": resumed.result}
    finally:
        await client.aclose()


if __name__ == "__main__":
    command, directory, base_url, api_key, *rest = sys.argv[1:]
    print(json.dumps(asyncio.run(main(command, Path(directory), base_url, api_key, *rest))))
