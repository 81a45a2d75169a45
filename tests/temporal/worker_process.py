"""A worker in a process of its own, for the tests that kill it with SIGKILL:
``python worker_process.py <temporal address> <task queue> <humanwire url> <api key>
[<marker file>]``. Prints ``ready`` once it polls, then runs until killed. With a marker
file, the first SMS send that finds no marker writes it after sending and then hangs, as
a worker that dies between the send and reporting it would."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ask_workflow import ShipDecision
from human_workflows import QuickSendAsk
from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.temporal import SEND_SMS_ACTIVITY, HumanWireActivities, SentAsk, SmsAsk


async def main(address: str, queue: str, base_url: str, api_key: str, *marker: str) -> None:
    client = await Client.connect(address)
    async with AsyncHumanWire(base_url=base_url, api_key=api_key) as humanwire:
        humanwire_activities = HumanWireActivities(humanwire)
        activities = humanwire_activities.all()
        if marker:
            hang_after = Path(marker[0])

            @activity.defn(name=SEND_SMS_ACTIVITY)
            async def send_then_hang(ask: SmsAsk) -> SentAsk:
                sent = await humanwire_activities.send_sms(ask)
                if not hang_after.exists():
                    hang_after.write_text(sent.interaction_id)
                    await asyncio.Event().wait()
                return sent

            activities = [send_then_hang, *activities[1:]]
        workflows = [ShipDecision, QuickSendAsk]
        async with Worker(client, task_queue=queue, workflows=workflows, activities=activities):
            print("ready", flush=True)
            await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
