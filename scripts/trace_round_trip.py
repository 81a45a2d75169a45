"""Which source files one SMS send and its reply run through.

The service runs in this process on a SQLite file, wired to the Twilio contract fake on
loopback (both as the provider tests run them). One round trip warms every path up
(imports, the first connection, the store's statements); then a profiler records the
file of every Python function called, in every thread, during a second round trip: the
client's ``messages.sms(..., wait_time=...)``, the fake's delivery to the person, the
person's reply signed back to the service, the held request answered.

It prints the humanwire files of that trace in groups: the engine's, the rest of the
service, the client, and the testing kit (the contract fake plays Twilio and the
person: it is counted apart, it is not the product). "In all" is the product's files:
engine + service + client. The architecture page (docs/explanation/architecture.md)
quotes these figures::

    python scripts/trace_round_trip.py            # the figures and the files
    python scripts/trace_round_trip.py --json     # the same, for a script
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import humanwire

if TYPE_CHECKING:
    from humanwire import HumanWire
    from humanwire.testing.twilio import FakeTwilio

PACKAGE = Path(humanwire.__file__).resolve().parent
SMS_FROM = "+14155550142"
HUMAN = "+12025550100"


class FileTrace:
    """The files of the functions called while ``recording`` is set, in any thread
    started after ``install`` (and the installing one)."""

    def __init__(self) -> None:
        self.recording = False
        self.files: set[str] = set()

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.recording and event == "call":
            self.files.add(frame.f_code.co_filename)

    def install(self) -> None:
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)

    def uninstall(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def group(files: set[str]) -> dict[str, list[str]]:
    """The package's files by part, as paths inside the package."""
    groups: dict[str, list[str]] = {"engine": [], "service": [], "client": [], "testing": []}
    for name in files:
        path = Path(name).resolve()
        if not path.is_relative_to(PACKAGE):
            continue
        inside = path.relative_to(PACKAGE).as_posix()
        if inside.startswith("server/engine/"):
            groups["engine"].append(inside)
        elif inside.startswith("server/"):
            groups["service"].append(inside)
        elif inside.startswith("testing/"):
            groups["testing"].append(inside)
        else:
            groups["client"].append(inside)
    return {part: sorted(paths) for part, paths in groups.items()}


def round_trip(trace: FileTrace, *, recorded: bool) -> None:
    """One SMS asked through the service and answered by the person through the fake."""
    from humanwire import HumanWire
    from humanwire.server.config import TwilioConfig
    from humanwire.server.runtime.runner import ServiceRunner
    from humanwire.testing.service import fast_config
    from humanwire.testing.twilio import FakeTwilio, TwilioFakeServer

    fake = FakeTwilio()
    fake.add_number(SMS_FROM)
    with tempfile.TemporaryDirectory() as directory, TwilioFakeServer(fake) as server:
        twilio = TwilioConfig(
            account_sid=fake.account_sid,
            auth_token=fake.auth_token,
            api_base=server.base_url,
            sms_from=SMS_FROM,
        )
        config = replace(fast_config(Path(directory) / "hw.db"), twilio=twilio)
        with ServiceRunner(config, "127.0.0.1", 0) as runner:
            number = fake.number(SMS_FROM)
            assert number is not None
            number.sms_url = f"{runner.base_url}/providers/twilio/messages"
            key = runner.create_account("trace")
            with HumanWire(api_key=key, base_url=runner.base_url, max_retries=0) as client:
                for attempt in range(2 if recorded else 1):
                    record = recorded and attempt == 1
                    answer = _ask(client, fake, record, trace)
                    assert answer == "Ship it", answer


def _ask(client: HumanWire, fake: FakeTwilio, record: bool, trace: FileTrace) -> str | None:
    sent_before = len(fake.sent_to(HUMAN))

    def person() -> None:
        fake.wait_for(lambda: len(fake.sent_to(HUMAN)) > sent_before, timeout=30)
        fake.send_inbound(HUMAN, SMS_FROM, "Ship it")

    thread = threading.Thread(target=person, daemon=True)
    trace.recording = record
    thread.start()
    try:
        result = client.messages.sms(to=HUMAN, message="Deploy to prod?", wait_time=30)
    finally:
        thread.join(30)
        trace.recording = False
    return result.reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the groups as JSON")
    options = parser.parse_args()
    trace = FileTrace()
    trace.install()
    try:
        round_trip(trace, recorded=True)
    finally:
        trace.uninstall()
    groups = group(trace.files)
    product = len(groups["engine"]) + len(groups["service"]) + len(groups["client"])
    if options.json:
        print(json.dumps({"product_files": product, **groups}, indent=2))
        return
    print(
        f"one SMS send and its reply: {product} humanwire files "
        f"({len(groups['engine'])} of the engine, {len(groups['service'])} of the rest of "
        f"the service, {len(groups['client'])} of the client; "
        f"{len(groups['testing'])} of the testing kit's fake besides)"
    )
    for part, paths in groups.items():
        print(f"\n{part} ({len(paths)}):")
        for path in paths:
            print(f"  {path}")


if __name__ == "__main__":
    main()
