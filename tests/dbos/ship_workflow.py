# The workflow of docs/guides/dbos.md, verbatim (tests/dbos checks the page holds it).
from dbos import DBOS

import humanwire.dbos as humanwire_dbos


@DBOS.workflow()
def ship_decision(hours: float) -> str:
    answer = humanwire_dbos.ask(
        to="+12025550100",
        message="Ship v2 tonight? Reply yes or no.",
        timeout=hours * 3600,  # seconds (or a timedelta)
    )
    return f"The human said: {answer}"
