"""Approval requests (``POST /approvals``) in Slack, against the Slack fake on both stores:
the approver's message has Approve / Reject beside a link to their page; a click by anyone
else is refused with an ephemeral note and decides nothing; the approver's click decides
(``via: slack_button``) and the message shows it, its buttons gone."""

from __future__ import annotations

from typing import Any

import httpx
from slack_support import SlackLive

from humanwire.testing.slack import FakeSlackMessage


def _buttons(message: FakeSlackMessage) -> list[dict[str, Any]]:
    return [
        element
        for block in message.blocks or []
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def _shown(message: FakeSlackMessage) -> str:
    parts = [message.text or ""]
    for block in message.blocks or []:
        if isinstance(block.get("text"), dict):
            parts.append(block["text"]["text"])
        for element in block.get("elements", []):
            if isinstance(element, dict) and isinstance(element.get("text"), str):
                parts.append(element["text"])
    return "\n".join(parts)


def test_only_the_approver_decides_with_the_buttons(slack_live: SlackLive) -> None:
    live = slack_live
    with httpx.Client(
        base_url=live.base_url, headers={"Authorization": f"Bearer {live.key}"}, timeout=20
    ) as api:
        asked = api.post(
            "/approvals",
            json={
                "title": "Deploy 4.2 to prod",
                "action": {"name": "deploy", "arguments": {"version": "4.2"}},
                "approvers": [{"channel": "slack", "to": live.member}],
                "followUpTime": 60,
            },
        )
        assert asked.status_code == 200, asked.text
        interaction_id = asked.json()["interactionId"]
        message = live.posted(live.member)
        labels = [button["text"]["text"] for button in _buttons(message)]
        assert labels == ["Approve", "Reject", "Open the page"]
        assert "Approval requested: Deploy 4.2 to prod" in _shown(message)
        page = _buttons(message)[2]["url"]
        assert httpx.get(page).status_code == 200

        # Someone else in the conversation clicks: refused, nothing decided.
        other = live.fake.add_member("mallory")
        live.fake.channels[message.channel].members.add(other)
        refused = live.fake.click(message, "humanwire_approval_approve", other)
        assert refused.status_code == 200
        live.fake.wait_for(lambda: len(live.fake.ephemerals) == 1)
        notice = live.fake.ephemerals[0]
        assert notice.user == other and "Only" in notice.text
        assert api.get(f"/approvals/{interaction_id}").json()["decision"] is None

        clicked = live.fake.click(message, "humanwire_approval_reject", live.member)
        assert clicked.status_code == 200
        decided = api.get(f"/approvals/{interaction_id}").json()
        assert decided["decision"] == "rejected"
        assert decided["decisions"][0]["via"] == "slack_button"
        assert decided["decisions"][0]["approver"] == {"channel": "slack", "to": live.member}
        live.fake.wait_for(lambda: bool(message.updates))
        assert _buttons(message) == []
        assert f"Rejected* by <@{live.member}>" in _shown(message)
        assert "Deploy 4.2 to prod" in _shown(message)

        again = live.fake.click(message, "humanwire_approval_approve", live.member)
        assert again.status_code == 200
        live.fake.wait_for(lambda: len(live.fake.ephemerals) == 2)
        assert api.get(f"/approvals/{interaction_id}").json()["decision"] == "rejected"
    assert live.fake.violations == []
