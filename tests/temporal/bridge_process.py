"""The answer bridge in a process of its own, for the tests that kill it with SIGKILL:
``python bridge_process.py <temporal address> <humanwire url> <api key> <cursor file>``.
Prints ``ready`` once its cursor is set, then follows the feed until killed."""

from __future__ import annotations

import asyncio
import sys

from temporalio.client import Client

from humanwire import AsyncHumanWire
from humanwire.temporal import AnswerBridge, FileCursor


async def main(address: str, base_url: str, api_key: str, cursor: str) -> None:
    client = await Client.connect(address)
    async with AsyncHumanWire(base_url=base_url, api_key=api_key) as humanwire:
        bridge = AnswerBridge(humanwire, client, FileCursor(cursor), poll_wait=1)
        await bridge.start_cursor()
        print("ready", flush=True)
        await bridge.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
