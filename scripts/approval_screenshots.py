"""Screenshots for the approvals guide (docs/guides/approval-requests.md): an approver's
page, the inbox's approval request, and the Slack message an approver gets.

    python scripts/approval_screenshots.py [out_dir]     # default: docs/screenshots

It starts the embedded service on a free port (SQLite in a temporary directory), asks
for a two-of-three approval (sms, slack and a link approver), lets the sms approver say
yes, and photographs the pages in headless chromium (Debian's, /usr/bin/chromium).

Slack is not reached from here (the sandbox takes the message), so the Slack picture is
a mock: the Block Kit blocks the service sends (``approval_request_blocks``) drawn as
HTML in Slack's layout. The blocks themselves are printed, and written beside the PNGs
as ``approval-slack-blocks.json``."""

from __future__ import annotations

import html
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, sync_playwright

from humanwire.server.delivery.slack.blocks import approval_request_blocks
from humanwire.testing.service import RunningService, start_test_service

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
PUBLIC_URL = "https://humanwire.example.com"
SMS_APPROVER = "+12025550100"
SLACK_APPROVER = "U0123ABCD"
REQUEST: dict[str, Any] = {
    "title": "Deploy release 4.2 to production",
    "description": "Canary was green for 2 hours; 3 migrations run first.",
    "action": {
        "name": "deploy",
        "arguments": {
            "service": "payments-api",
            "version": "4.2.0",
            "region": "eu-west-1",
            "canary": False,
        },
    },
    "approvers": [
        {"channel": "sms", "to": SMS_APPROVER},
        {"channel": "slack", "to": SLACK_APPROVER},
        {"channel": "link", "to": "Dana"},
    ],
    "quorum": 2,
    "followUpTime": 3600,
}


def _until(check: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)
    return found


def _mrkdwn(text: str) -> str:
    """Enough of Slack's mrkdwn for the mock: *bold*, `code`, <url|label> and lines."""
    shown = html.escape(text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
    shown = re.sub(r"\*([^*\n]+)\*", r"<b>\1</b>", shown)
    shown = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", shown)
    return shown.replace("\n", "<br>")


def slack_mock(blocks: list[dict[str, Any]]) -> str:
    """The blocks as Slack lays a bot's message out (sections, then a row of buttons)."""
    parts = []
    for block in blocks:
        if block["type"] == "section":
            parts.append(f'<div class="section">{_mrkdwn(block["text"]["text"])}</div>')
        elif block["type"] == "actions":
            buttons = "".join(
                f'<span class="btn {element.get("style", "")}">'
                f"{html.escape(element['text']['text'])}</span>"
                for element in block["elements"]
            )
            parts.append(f'<div class="actions">{buttons}</div>')
    return f"""<!doctype html><meta charset="utf-8"><style>
body {{ margin: 0; font: 15px/1.46 Lato, "Helvetica Neue", Arial, sans-serif; color: #1d1c1d;
  background: #fff; }}
.frame {{ width: 660px; }} .msg {{ display: flex; gap: 8px; padding: 12px 20px; }}
.avatar {{ width: 36px; height: 36px; border-radius: 4px; background: #4a154b; color: #fff;
  font-weight: 700; display: flex; align-items: center; justify-content: center; }}
.name {{ font-weight: 900; }} .app {{ font-size: 10px; background: #e8e8e8; color: #616061;
  padding: 1px 3px; border-radius: 2px; margin: 0 4px; font-weight: 700; }}
.time {{ color: #616061; font-size: 12px; }}
.section {{ margin: 2px 0 8px; }} code {{ color: #c01343; background: #f7f7f9;
  border: 1px solid #e8e8e8; border-radius: 3px; padding: 0 3px; font-size: 12px; }}
.actions {{ display: flex; gap: 8px; }}
.btn {{ border: 1px solid #bbb; border-radius: 4px; padding: 3px 12px; font-weight: 700;
  font-size: 13px; }}
.btn.primary {{ background: #007a5a; border-color: #007a5a; color: #fff; }}
.btn.danger {{ color: #e01e5a; border-color: #e01e5a; }}
.note {{ color: #616061; font-size: 11px; padding: 0 20px 10px; }}
</style><div class="frame"><div class="msg"><div class="avatar">hw</div><div><div>
<span class="name">humanwire</span><span class="app">APP</span>
<span class="time">10:42 AM</span></div>{"".join(parts)}
</div></div><p class="note">A mock drawn from the Block Kit blocks the service sends.</p></div>"""


def take_approval_screenshots(
    browser: Browser, service: RunningService, out_dir: Path
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    key = service.create_account("Acme deploy bot")
    written: list[Path] = []
    with httpx.Client(
        base_url=service.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as api:
        asked = api.post("/approvals", json=REQUEST)
        asked.raise_for_status()
        approval = asked.json()

        def sent() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = api.get("/sandbox/messages").json()
            return found if len(found) >= 2 else []

        deliveries = _until(sent)
        by_channel = {d["channel"]: d for d in deliveries}
        # The sms approver says yes: the page and the inbox show a tally under way.
        sms = by_channel["sms"]
        api.post(
            "/sandbox/replies",
            json={"channel": "sms", "from": SMS_APPROVER, "to": sms["from"], "body": "yes"},
        ).raise_for_status()
        _until(lambda: api.get(f"/approvals/{approval['interactionId']}").json()["decisions"])

        # The links as your service's address would show them, not this run's port.
        slack = {
            name: value.replace(service.base_url, PUBLIC_URL) if isinstance(value, str) else value
            for name, value in by_channel["slack"].items()
        }
        blocks = approval_request_blocks(
            slack["text"], f"{approval['interactionId']}:1", slack.get("formUrl") or ""
        )
        blocks_path = out_dir / "approval-slack-blocks.json"
        blocks_path.write_text(json.dumps(blocks, indent=2, ensure_ascii=False) + "\n")
        written.append(blocks_path)

        context = browser.new_context(viewport={"width": 480, "height": 900})
        try:
            page = context.new_page()
            page.goto(approval["links"][0]["url"])
            page.get_by_label("Comment (optional)").fill("Ship it after the 11:00 standup")
            path = out_dir / "approval-page.png"
            page.screenshot(path=str(path), full_page=True)
            written.append(path)

            page.set_viewport_size({"width": 1100, "height": 900})
            page.goto(f"{service.base_url}/inbox?key={key}")
            page.wait_for_selector("[data-live-connected]")
            path = out_dir / "approval-inbox.png"
            page.locator('[data-live-panel="approvals"]').screenshot(path=str(path))
            written.append(path)

            # A page of its own: the inbox's CSP would refuse the mock's inline style.
            mock = context.new_page()
            mock.set_content(slack_mock(blocks))
            path = out_dir / "approval-slack.png"
            mock.locator(".frame").screenshot(path=str(path))
            written.append(path)
        finally:
            context.close()
    return written


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/screenshots")
    service = start_test_service(Path(tempfile.mkdtemp()) / "approval-screens.db")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            try:
                for path in take_approval_screenshots(browser, service, out_dir):
                    print(f"{path} ({path.stat().st_size // 1024} KB)")
            finally:
                browser.close()
    finally:
        service.stop()


if __name__ == "__main__":
    main()
