"""Account creation held at a gate, so a readiness test sees for certain what the service
answers while its startup account does not exist yet (a slow store, made deterministic).

``held_create_account(gate, started)``: an ``Accounts.create`` (``engine.accounts``) that
touches ``started``, then waits, without blocking the event loop, until the file ``gate``
exists.

Run as a script it is ``humanwire`` with that hold in place, for a subprocess::

    python account_gate.py GATE STARTED serve --api-key K ...
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from humanwire.server.engine.accounts import Accounts


def held_create_account(gate: Path, started: Path) -> Callable[..., Awaitable[Any]]:
    create = Accounts.create

    async def held(self: Accounts, *args: Any, **kwargs: Any) -> Any:
        started.touch()
        while not gate.exists():
            await asyncio.sleep(0.02)
        return await create(self, *args, **kwargs)

    return held


if __name__ == "__main__":
    from humanwire import cli

    Accounts.create = held_create_account(Path(sys.argv[1]), Path(sys.argv[2]))  # type: ignore[method-assign]
    sys.exit(cli.main(sys.argv[3:]))
