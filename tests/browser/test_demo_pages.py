"""``humanwire demo`` played by a person in chromium: they approve on the approval page
and its thank-you page loads; the demo's service keeps serving after the pipeline ended
(the inbox still loads) until Ctrl+C, and the demo says when the inbox goes offline."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from humanwire.testing import ScriptedHuman
from humanwire.testing.human import approval_page

pytestmark = pytest.mark.browser


class DemoProcess:
    """``humanwire demo`` in a process of its own, its output read line by line."""

    def __init__(self, home: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HUMANWIRE_")}
        env |= {"HUMANWIRE_HOME": str(home), "HUMANWIRE_EMBEDDED_PORT": "0"}
        env["PYTHONUNBUFFERED"] = "1"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "humanwire.cli", "demo"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))

    def line_matching(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            self.lines.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r} in:\n" + "\n".join(self.lines))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


def test_the_page_after_approving_loads_and_the_inbox_stays_online_until_ctrl_c(
    browser: Browser, tmp_path: Path
) -> None:
    demo = DemoProcess(tmp_path)
    context = browser.new_context()
    try:
        base_url = demo.line_matching(r"service: (http://127\.0\.0\.1:\d+)").group(1)
        inbox = demo.line_matching(r"inbox:\s+(\S+key=(hw_\S+))")
        human = ScriptedHuman(base_url, inbox.group(2))
        try:
            human.reply("Porto")
            # The approval request's text, as the demo shows it: its page's link.
            demo.line_matching(r"→ sms to \S+: Approval requested")
            asked = demo.line_matching(r"Decide here: (\S+/a/\S+)")
            link = approval_page(asked.group(1))
            assert link is not None, asked.string
            page = context.new_page()
            page.goto(link)
            page.get_by_role("button", name="Approve").click()
            expect(
                page.get_by_role("heading", name="Thank you, your decision was recorded")
            ).to_be_visible()
        finally:
            human.close()
        demo.line_matching(r"^3\. Booked the offsite in Porto\.$")
        # The pipeline is over; what the person has open still loads.
        shown = page.goto(link)
        assert shown is not None and shown.ok
        expect(page.get_by_role("button", name="Approve")).to_have_count(0)
        shown = page.goto(inbox.group(1))
        assert shown is not None and shown.ok
        demo.line_matching(r"The inbox stays online for 60 s \(Ctrl\+C to stop it now\)\.")
        assert demo.process.poll() is None
        demo.process.send_signal(signal.SIGINT)  # Ctrl+C
        demo.line_matching(r"^The inbox is offline: the demo's service stopped\.$")
        assert demo.process.wait(timeout=30) == 0
        with pytest.raises(Exception, match="ERR_CONNECTION_REFUSED"):
            page.goto(inbox.group(1))
    finally:
        context.close()
        demo.stop()
