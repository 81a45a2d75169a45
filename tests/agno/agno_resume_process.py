"""One side of the two-process Agno tests (run by ``framework_support.run_process``): a
process that pauses an Agno run at its confirmation and exits, or one that never saw it
and continues it from Agno's db (``SqliteDb`` file or ``PostgresDb`` schema).

``pause <dir> <base_url> <api_key> <db>``; ``webhook <dir> <base_url> <api_key> <db>
<body_file> <signature> <secret>``; ``resume <dir> <base_url> <api_key> <db> <run_id>
<session_id>``. ``<db>``: ``sqlite`` (``<dir>/agno.db``) or a PostgreSQL schema name. The
last line printed is a JSON object."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agno_helpers import agent, gated_tools, once

from framework_support import PAY, PHONE
from humanwire import AsyncHumanWire
from humanwire.agno import HumanRuns
from humanwire.webhooks import SIGNATURE_HEADER
from pg_support import DATABASE_URL


def agno_db(directory: Path, db: str) -> Any:
    if db == "sqlite":
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=str(directory / "agno.db"))
    from agno.db.postgres import PostgresDb

    url = DATABASE_URL.replace("postgresql://", "postgresql+psycopg://", 1)
    return PostgresDb(db_url=url, db_schema=db)


async def main(
    command: str, directory: Path, base_url: str, api_key: str, db: str, *rest: str
) -> dict[str, Any]:
    client = AsyncHumanWire(api_key=api_key, base_url=base_url)
    try:
        runs = HumanRuns(client=client, to=PHONE, follow_up_time=120)
        built = agent(
            once(*PAY), gated_tools(directory / "payments.log"), db=agno_db(directory, db)
        )
        if command == "pause":
            result = await runs.start(built, "Pay Bob 50", session_id="session-1")
            return {
                "paused": result.is_paused,
                "run_id": result.run_id,
                "session_id": result.session_id,
            }
        if command == "webhook":
            body_file, signature, secret = rest
            body = Path(body_file).read_bytes()
            resumed = await runs.resume_from_webhook(
                built, body, {SIGNATURE_HEADER: signature}, secret=secret
            )
        else:
            run_id, session_id = rest
            resumed = await runs.resume(built, run_id, session_id, timeout=0)
        if resumed is None:
            return {"resumed": False}
        return {"resumed": True, "paused": resumed.is_paused, "output": resumed.content}
    finally:
        await client.aclose()


if __name__ == "__main__":
    command, directory, base_url, api_key, db, *rest = sys.argv[1:]
    print(json.dumps(asyncio.run(main(command, Path(directory), base_url, api_key, db, *rest))))
