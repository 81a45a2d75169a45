"""What ``import humanwire`` costs next to importing its two dependencies.

Each run is a fresh interpreter that times one import statement with
``time.perf_counter()`` around it (interpreter start-up is not counted). Runs alternate
between ``import httpx, pydantic`` (the floor: any client of this kind pays it),
``import humanwire``, and ``from humanwire import HumanWire`` (what a script that makes a
client pays before its first call). It prints the median of each and its ratio to the
floor, then the slowest modules by cumulative import time under each humanwire statement,
from one ``python -X importtime`` run (the breakdown, not the figure).

Byte-code is written and used as an installed package's would be: the runs go without
``PYTHONDONTWRITEBYTECODE``, after one warm-up run of each statement, so a source tree that
was never compiled is not charged for compiling itself.

Run::

    python benchmarks/bench_import.py             # 15 runs of each
    python benchmarks/bench_import.py --runs 31
    python benchmarks/bench_import.py --top 25    # a longer breakdown

Run it with the project's Python (its venv), so every statement sees the same packages.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence

BASELINE = "import httpx, pydantic"
SUBJECT = "import humanwire"
FIRST_USE = "from humanwire import HumanWire"


def clean_env() -> dict[str, str]:
    """This environment, allowed to write and read ``__pycache__``."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def time_import(statement: str, env: Mapping[str, str]) -> float:
    """Seconds ``statement`` takes in a fresh interpreter, measured inside it."""
    code = (
        f"import time\nt = time.perf_counter()\n{statement}\nprint(repr(time.perf_counter() - t))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    return float(out.strip())


def import_breakdown(statement: str, env: Mapping[str, str]) -> list[tuple[str, int, int]]:
    """``(module, self µs, cumulative µs)`` for every module ``statement`` imports."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stderr
    rows: list[tuple[str, int, int]] = []
    for line in err.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line[len("import time:") :].split("|")
        if len(fields) != 3 or not fields[0].strip().isdigit():
            continue  # the header line
        rows.append((fields[2].strip(), int(fields[0]), int(fields[1])))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters per statement")
    parser.add_argument("--top", type=int, default=10, help="modules in each breakdown")
    args = parser.parse_args(argv)

    env = clean_env()
    statements = (BASELINE, SUBJECT, FIRST_USE)
    for statement in statements:  # warm-up: compiles and caches the byte-code
        time_import(statement, env)
    times: dict[str, list[float]] = {statement: [] for statement in statements}
    for _ in range(args.runs):
        for statement in statements:
            times[statement].append(time_import(statement, env))

    floor = statistics.median(times[BASELINE])
    print(f"python {sys.version.split()[0]}, {args.runs} runs each: median (min-max), ratio")
    for statement in statements:
        median = statistics.median(times[statement])
        low, high = min(times[statement]) * 1000, max(times[statement]) * 1000
        print(
            f"  {statement:<32} {median * 1000:7.1f} ms  ({low:.1f}-{high:.1f})"
            f"  {median / floor:5.2f}x"
        )

    for statement in (SUBJECT, FIRST_USE):
        rows = sorted(import_breakdown(statement, env), key=lambda row: row[2], reverse=True)
        print(f"\ntop {args.top} modules by cumulative import time under `{statement}` (one run):")
        print(f"  {'cumulative':>10}  {'self':>8}  module")
        for name, self_us, cumulative_us in rows[: args.top]:
            print(f"  {cumulative_us / 1000:8.1f}ms  {self_us / 1000:6.1f}ms  {name}")


if __name__ == "__main__":
    main()
