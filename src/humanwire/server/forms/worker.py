"""The worker threads of a form's own patterns. Checking a new form parses and compiles
its patterns, checking an answer matches them: tens of milliseconds at worst for one
form, and a batch carries a hundred forms. That runs here, not on the event loop: RE2
releases the GIL while it compiles and matches, and the parsing in Python shares it a
few milliseconds at a time.

One thread for new forms, one for answers: a burst of forms an account sends never
delays the people answering forms, and at most two threads contend with the loop for
the GIL."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

__all__ = ["Work", "off_loop"]

T = TypeVar("T")
Work = Literal["new forms", "answers"]

_pools: dict[Work, ThreadPoolExecutor] = {}


async def off_loop(work: Work, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` on the worker thread of ``work``."""
    pool = _pools.get(work)
    if pool is None:
        name = "humanwire-" + work.replace(" ", "-")
        pool = _pools[work] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    call = functools.partial(function, *args)
    return await asyncio.get_running_loop().run_in_executor(pool, call)
