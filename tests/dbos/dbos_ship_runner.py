# The runner of docs/guides/dbos.md, verbatim (tests/dbos runs it and checks the page).
from dbos import DBOS, DBOSConfig
from ship_workflow import ship_decision

import humanwire.dbos as humanwire_dbos
from humanwire import HumanWire


def main() -> str:
    with HumanWire() as humanwire:  # the embedded service
        humanwire_dbos.configure(humanwire)  # the client the steps send with
        config: DBOSConfig = {
            "name": "ship",
            "system_database_url": "sqlite:///ship.sqlite",  # or postgresql://…
            "application_version": "ship-1",  # pinned: a wait outlives a deploy
        }
        DBOS(config=config)
        DBOS.launch()  # recovers the workflows a killed process left waiting
        bridge = humanwire_dbos.AnswerBridge(
            humanwire, DBOS, humanwire_dbos.FileCursor("humanwire-dbos.cursor"), poll_wait=5
        )
        bridge.start()  # before the first ask: no answer can slip past it
        try:
            # The texts this phone had before the ask (the sandbox may be shared).
            earlier = humanwire.sandbox.deliveries(to="+12025550100")
            handle = DBOS.start_workflow(ship_decision, 72.0)
            # Play the human on the embedded service's sandbox phone: read the text, reply.
            (text,) = humanwire.sandbox.deliveries(
                to="+12025550100", after=earlier[0].id if earlier else None, wait=60
            )
            humanwire.sandbox.reply(
                channel="sms", from_=text.to, to=text.from_ or "", body="yes, ship it"
            )
            return handle.get_result()
        finally:
            bridge.stop()
            DBOS.destroy()


if __name__ == "__main__":
    print(main())  # The human said: yes, ship it
