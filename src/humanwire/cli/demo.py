"""``humanwire demo [--auto]``: an agent pipeline reaching a human through the embedded
service."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    demo = commands.add_parser("demo", help="run the demo: an agent reaching a human")
    demo.add_argument("--auto", action="store_true", help="play the human automatically")
    demo.add_argument(
        "--stay-online",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long the inbox stays online after the pipeline ends (not with --auto)",
    )


def run(args: argparse.Namespace) -> int:
    return _demo(auto=args.auto, stay_online=args.stay_online)


def _demo(*, auto: bool, stay_online: float | None = None) -> int:
    try:
        demo = importlib.import_module("humanwire.demo")
    except ModuleNotFoundError as exc:
        if exc.name not in ("humanwire.demo",):
            raise
        print("humanwire: the demo is not available in this version.", file=sys.stderr)
        return 1
    argv = [] if stay_online is None else ["--stay-online", str(stay_online)]
    result = demo.main(argv, auto=auto)
    return result if isinstance(result, int) else 0
