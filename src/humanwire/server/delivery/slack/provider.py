"""``SlackProvider``: the slack channel through real Slack (docs/providers.md "Slack").

- **Sends**: ``from`` is the shared workspace (the operator's bot, ``slack.bot_token``)
  or a workspace the account installed the bot in (OAuth v2, ``installs``). A member id
  (``U…`` / ``W…``) gets a DM (``conversations.open``), anything else is a channel id.
  The message is posted with ``chat.postMessage`` (Block Kit: ``blocks``) and its
  ``deliveryStatus`` is ``sent`` once Slack answers ok. The interaction's provider ref is
  ``team:channel:ts``, which is how a thread reply or a button click finds it again.
- **Replies** (``/providers/slack/events``): a human's message in the thread of a
  message we posted answers that interaction (late ones reach the webhooks as
  ``message.received``); bots, edits, deletions and other threads are ignored. In an
  account's own workspace a direct message to the bot outside any thread is the
  account's unsolicited ``message.received``; in the shared workspace it belongs to
  nobody (every account shares that bot).
- **Approvals** (``/providers/slack/interactions``): Approve / Reject on an approval form
  submit the form; the message then shows who decided and when.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute

from ...background.work import BackgroundWork
from ..base import Credentials, Outbound, ProviderFailure, RecipientUnreachable, Sent, Workspace
from . import blocks
from .installs import SlackInstalls
from .shapes import ACTED_SUBTYPES
from .web import SlackError, SlackWeb

if TYPE_CHECKING:
    from ...config import SlackConfig
    from ...store.records import InteractionRecord
    from ..port import InboundPort

__all__ = ["BOT_SCOPES", "ROUTE_PREFIX", "SlackProvider", "message_ref"]

logger = logging.getLogger("humanwire.slack")

ROUTE_PREFIX = "/providers/slack"
BOT_SCOPES = (
    "chat:write",
    "im:write",
    "im:history",
    "channels:history",
    "groups:history",
    "mpim:history",
    "users:read",
)
"""What the bot asks for: post, open DMs, read the replies in DMs and channels it is in."""
EVENT_SCOPE = "slack-event"
EVENT_TTL = 3600.0
"""Slack retries an event for about five minutes; an id is remembered for an hour."""
DECISION_SCOPE = "slack-decision"
REF_WAIT = 5.0
"""How long a reply to (or a click on) our message waits for its send to be recorded."""

UNREACHABLE = {
    "channel_not_found": "no such Slack channel or member",
    "user_not_found": "no such Slack member",
    "user_not_visible": "that Slack member is not visible to the bot",
    "users_not_found": "no such Slack member",
    "cannot_dm_bot": "the bot cannot DM another bot",
    "user_disabled": "that Slack member is deactivated",
    "not_in_channel": "the bot is not in that channel: invite it (/invite @bot) first",
    "is_archived": "that Slack channel is archived",
    "channel_is_archived": "that Slack channel is archived",
    "restricted_action": "the workspace does not let the bot post there",
}
"""Slack's answers that mean ``to`` cannot be reached: 400 naming ``to``."""


_UNREACHED = frozenset(
    {
        "ratelimited",
        "request_timeout",
        "service_unavailable",
        "fatal_error",
        "internal_error",
    }
)
"""``auth.test`` answers that say nothing about the token (besides ``connection_failed
(…)`` and ``http_5xx``: Slack was not reached, or failed): the credentials stay
unverified rather than refused."""


def message_ref(team: str, channel: str, ts: str) -> str:
    """A posted message's id: Slack's ``ts`` is unique only within a channel."""
    return f"{team}:{channel}:{ts}"


class SlackProvider:
    name = "slack"
    channels = ("slack",)

    def __init__(self, config: SlackConfig, inbound: InboundPort, *, public_url: str) -> None:
        self.config = config
        self.inbound = inbound
        self.public_url = public_url.rstrip("/")
        self.web = SlackWeb(config.api_base, metrics=inbound.metrics)
        self.installs = SlackInstalls(inbound.state, config.client_secret)
        self.shared_team = ""
        self.bot_user_id = ""
        self.credentials = Credentials()
        self.background = BackgroundWork("the Slack provider")

    # -- identity ------------------------------------------------------------------
    @property
    def senders(self) -> Mapping[str, str]:
        return {"slack": self.shared_team}

    @property
    def oauth_enabled(self) -> bool:
        return bool(self.config.client_id and self.config.client_secret)

    def url(self, route: str) -> str:
        return f"{self.public_url}{ROUTE_PREFIX}/{route}"

    async def _identify(self) -> None:
        """The shared workspace's team id and bot user (``auth.test``)."""
        answer = await self.web.call("auth_test", self.config.bot_token)
        self.shared_team = str(answer.get("team_id") or "")
        self.bot_user_id = str(answer.get("user_id") or "")
        self.credentials = Credentials("accepted", "slack.bot_token accepted by auth.test")

    async def start(self) -> None:
        try:
            await self._identify()
        except SlackError as exc:
            # Not fatal: sends try again, and say what is wrong.
            logger.error("Slack auth.test failed for slack.bot_token: %s", exc.error)
            unreached = exc.error.startswith(("connection_failed", "http_5"))
            if unreached or exc.error in _UNREACHED:
                self.credentials = Credentials(
                    "unverified", f"Slack could not be reached at start ({exc.error})"
                )
            else:
                self.credentials = Credentials(
                    "refused", f"slack.bot_token refused by auth.test ({exc.error})"
                )

    async def aclose(self) -> None:
        await self.background.cancel()
        await self.web.aclose()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Work that goes on after Slack's request was acknowledged."""
        self.background.spawn(work)

    # -- senders -------------------------------------------------------------------
    async def accepts_sender(self, account_id: str, channel: str, sender: str) -> bool:
        if sender == self.shared_team:
            return True
        return await self.installs.team_account(sender) == account_id

    async def workspaces(self, account_id: str) -> list[Workspace]:
        return [
            Workspace(found.team_id, found.team_name, found.installed_at)
            for found in await self.installs.of_account(account_id)
        ]

    async def install_url(self, account_id: str) -> str:
        return f"{ROUTE_PREFIX}/install?state={await self.installs.new_state(account_id)}"

    async def disconnect(self, account_id: str, team_id: str) -> bool:
        """The account's revoke: its token for ``team_id`` is forgotten (removing the app
        in Slack's settings is the workspace admin's)."""
        token = await self.installs.token(team_id)
        if not await self.installs.revoke(team_id, account_id=account_id):
            return False
        if token is not None:
            self.web.forget(token)
        logger.info("Slack workspace %s disconnected by its account", team_id)
        return True

    async def _token(self, team: str) -> str | None:
        if not team or team == self.shared_team:
            return self.config.bot_token
        return await self.installs.token(team)

    async def _workspace(self, account_id: str, team: str | None) -> tuple[str, str]:
        """The team and bot token a send from ``team`` uses."""
        if not self.shared_team:
            try:
                await self._identify()
            except SlackError as exc:
                raise _failure(exc, "the shared workspace's bot") from None
        if not team or team == self.shared_team:
            return self.shared_team, self.config.bot_token
        token = (
            await self.installs.token(team)
            if await self.installs.team_account(team) == account_id
            else None
        )
        if token is None:
            raise RecipientUnreachable(
                f"the bot is not installed in workspace {team} for this account", field="from"
            )
        return team, token

    # -- sends ---------------------------------------------------------------------
    async def deliver(self, item: Outbound) -> Sent:
        team, token = await self._workspace(item.account_id, item.from_addr)
        deadline = item.wait_deadline
        channel = item.to_addr
        try:
            if channel[:1] in ("U", "W"):
                opened = await self.web.call(
                    "conversations_open", token, deadline=deadline, users=channel
                )
                channel = str(opened["channel"]["id"])
            posted = await self.web.call(
                "chat_postMessage",
                token,
                deadline=deadline,
                channel=channel,
                text=blocks.escape(item.text),
                blocks=await self._blocks(item),
                unfurl_links=False,
                unfurl_media=False,
            )
        except SlackError as exc:
            if exc.error in UNREACHABLE:
                raise RecipientUnreachable(
                    f"{UNREACHABLE[exc.error]} ({item.to_addr}; Slack: {exc.error})"
                ) from None
            raise _failure(exc, "the message") from None
        return Sent(ref=message_ref(team, str(posted["channel"]), str(posted["ts"])), status="sent")

    async def _blocks(self, item: Outbound) -> list[dict[str, Any]]:
        if item.kind == "message" and item.form_url and item.interaction_id:
            # An approval request's text carries its approver's page: the buttons too.
            position = await self.inbound.button_approver(
                "slack", item.interaction_id, item.to_addr
            )
            if position is not None:
                value = f"{item.interaction_id}:{position}"
                return blocks.approval_request_blocks(
                    item.text, value, item.form_url, item.queue_url
                )
        if item.kind == "form" and item.form_url and item.interaction_id:
            record = await self.inbound.interaction(item.interaction_id)
            if record is not None:
                return blocks.form_blocks(item.text, self.inbound.form_of(record), item.form_url)
        return blocks.text_blocks(item.text)

    async def hang_up(self, ref: str) -> None:
        """Slack carries no calls."""

    # -- events --------------------------------------------------------------------
    async def first_delivery(self, event_id: str) -> bool:
        """False for an event id seen before (Slack's retries): it is acknowledged and
        dropped."""
        if not event_id:
            return True
        store = self.inbound.state
        if await store.get_provider_state(EVENT_SCOPE, event_id) is not None:
            return False
        now = time.time()
        await store.delete_provider_state_before(EVENT_SCOPE, now - EVENT_TTL)
        await store.put_provider_state(EVENT_SCOPE, event_id, {"at": now}, now)
        return True

    async def _posted(self, team: str, channel: str, ts: str) -> InteractionRecord | None:
        """The interaction whose message ``ts`` is. A reply or a click can overtake
        Slack's answer to ``chat.postMessage`` (the ref is stored once it arrives), so a
        miss is looked up again for a few seconds."""
        if not (team and channel and ts):
            return None  # no message of ours lacks one: nothing to wait for
        ref = message_ref(team, channel, ts)
        deadline = time.monotonic() + REF_WAIT
        while True:
            record = await self.inbound.interaction_by_ref(ref)
            if record is not None or time.monotonic() >= deadline:
                return record
            await asyncio.sleep(0.05)

    async def _our_bot(self, team: str, user: object) -> bool:
        if team == self.shared_team:
            return bool(user) and user == self.bot_user_id
        found = await self.installs.get(team)
        return found is not None and bool(user) and user == found.bot_user_id

    async def on_event(self, envelope: Mapping[str, Any]) -> str:
        """An ``event_callback`` (after the acknowledgement), of the shape
        ``shapes.event_envelope`` checked; returns what became of it, for the log and the
        tests."""
        from ..port import InboundText

        event = envelope.get("event")
        if not isinstance(event, Mapping):
            return "ignored"
        team = str(envelope.get("team_id") or event.get("team") or "")
        kind = event.get("type")
        if kind in ("app_uninstalled", "tokens_revoked"):
            return await self._uninstalled(team, event)
        if kind != "message":
            return "ignored"
        if event.get("subtype") not in ACTED_SUBTYPES:
            return "ignored"  # edits, deletions, joins, bot messages
        user = str(event.get("user") or "")
        if not user or event.get("bot_id") or user == self.bot_user_id:
            return "ignored"
        shared = team == self.shared_team
        account_id = None if shared else await self.installs.team_account(team)
        if not shared and account_id is None:
            return "ignored"  # a workspace no account holds
        channel = str(event.get("channel") or "")
        thread_ts, ts = event.get("thread_ts"), event.get("ts")
        record = None
        if thread_ts and thread_ts != ts:
            if await self._our_bot(team, event.get("parent_user_id")):
                record = await self._posted(team, channel, str(thread_ts))
            else:
                ref = message_ref(team, channel, str(thread_ts))
                record = await self.inbound.interaction_by_ref(ref)
        if record is not None:
            account_id = record.account_id
        elif shared or event.get("channel_type") != "im":
            return "ignored"  # not a reply to us, not a DM to an account's own bot
        assert account_id is not None
        stored = await self.inbound.receive_text(
            InboundText(
                channel="slack",
                from_addr=user,
                to_addr=team,
                body=str(event.get("text") or ""),
                thread=record.id if record is not None else None,
                ref=str(envelope.get("event_id") or "") or None,
            ),
            account_id=account_id,
        )
        if stored is None:
            return "duplicate"
        return "matched" if stored.interaction_id else "unsolicited"

    async def _uninstalled(self, team: str, event: Mapping[str, Any]) -> str:
        if event.get("type") == "tokens_revoked":
            bots = (event.get("tokens") or {}).get("bot") or []
            found = await self.installs.get(team)
            if found is None or (bots and found.bot_user_id not in bots):
                return "ignored"
        if team == self.shared_team:
            logger.error("the app was uninstalled from the shared workspace %s", team)
            return "ignored"
        if await self.installs.revoke(team):
            logger.info("Slack workspace %s uninstalled the app: its token is forgotten", team)
            return "revoked"
        return "ignored"

    # -- approval buttons ----------------------------------------------------------
    async def on_click(self, payload: Mapping[str, Any]) -> str:
        """A ``block_actions`` payload (of the shape ``shapes.interaction_payload``
        checked): Approve / Reject submit the approval form (at once: a double click
        decides once); telling Slack (the message updated, an ephemeral notice) goes on
        in the background."""
        from ...errors import Conflict, Gone, InvalidRequest

        ids = (blocks.APPROVE, blocks.REJECT, blocks.APPROVAL_APPROVE, blocks.APPROVAL_REJECT)
        action = next(
            (
                found
                for found in payload.get("actions") or ()
                if isinstance(found, Mapping) and found.get("action_id") in ids
            ),
            None,
        )
        if action is None:
            return "ignored"  # the form link button also reports its clicks
        team = str((payload.get("team") or {}).get("id") or "")
        user = str((payload.get("user") or {}).get("id") or "")
        container = payload.get("container") or {}
        channel = str(container.get("channel_id") or (payload.get("channel") or {}).get("id") or "")
        ts = str(container.get("message_ts") or (payload.get("message") or {}).get("ts") or "")
        if action.get("action_id") in (blocks.APPROVAL_APPROVE, blocks.APPROVAL_REJECT):
            return await self._approval_click(payload, action, team, user, channel, ts)
        record = await self._posted(team, channel, ts)
        if record is None or record.kind != "form" or record.form_token is None:
            return "ignored"
        decision = "approve" if action.get("action_id") == blocks.APPROVE else "reject"
        form = self.inbound.form_of(record)
        token = await self._token(team)
        try:
            await self.inbound.submit_form(record.form_token, {"decision": decision})
        except Conflict:
            self.spawn(self._notice(token, channel, user, await self._already(record.id)))
            return "already decided"
        except Gone:
            self.spawn(
                self._notice(
                    token, channel, user, "This approval has expired: nothing was decided."
                )
            )
            self.spawn(self._update(token, channel, ts, blocks.expired_blocks(form), form.title))
            return "expired"
        except InvalidRequest:
            self.spawn(self._notice(token, channel, user, "Open the form to answer it."))
            return "invalid"
        now = time.time()
        await self.inbound.state.put_provider_state(
            DECISION_SCOPE, record.id, {"user": user, "decision": decision, "at": now}, now
        )
        self.spawn(
            self._update(
                token,
                channel,
                ts,
                blocks.decided_blocks(form, decision, user, now),
                blocks.decided_text(form, decision, user, now),
            )
        )
        return "approved" if decision == "approve" else "rejected"

    async def _approval_click(
        self,
        payload: Mapping[str, Any],
        action: Mapping[str, Any],
        team: str,
        user: str,
        channel: str,
        ts: str,
    ) -> str:
        """Approve / Reject of an approval request: only its approver decides (anyone
        else gets an ephemeral refusal); the message then shows the decision."""
        interaction_id, _, position = str(action.get("value") or "").rpartition(":")
        if not interaction_id or not position.isdigit():
            return "ignored"
        decision = "approve" if action.get("action_id") == blocks.APPROVAL_APPROVE else "reject"
        result, text = await self.inbound.decide_by_button(
            "slack", interaction_id, int(position), user, decision
        )
        token = await self._token(team)
        # The message's text as posted (escaped for mrkdwn then; shown again, escaped again).
        posted = str((payload.get("message") or {}).get("text") or "")
        original = posted.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        if result == "refused":
            self.spawn(self._notice(token, channel, user, text))
        elif result == "recorded":
            line = blocks.decided_line(decision, user, time.time())
            content = blocks.approval_settled_blocks(original, line)
            self.spawn(self._update(token, channel, ts, content, line))
        elif result == "already":
            self.spawn(self._notice(token, channel, user, "You decided this approval already."))
        elif result == "closed":
            self.spawn(self._notice(token, channel, user, f"This approval is closed: {text}"))
            line = f":lock: {blocks.escape(text)}"
            self.spawn(
                self._update(
                    token, channel, ts, blocks.approval_settled_blocks(original, line), line
                )
            )
        return result

    async def _already(self, interaction_id: str) -> str:
        decided = await self.inbound.state.get_provider_state(DECISION_SCOPE, interaction_id)
        if decided is None:
            return "This was already answered through the form."
        label = "approved" if decided.get("decision") == "approve" else "rejected"
        return f"This was already {label} by <@{blocks.escape(str(decided.get('user')))}>."

    async def _update(
        self, token: str | None, channel: str, ts: str, content: list[dict[str, Any]], text: str
    ) -> None:
        try:
            await self.web.call(
                "chat_update", token, channel=channel, ts=ts, blocks=content, text=text
            )
        except SlackError as exc:
            logger.warning("Slack chat.update of %s/%s failed: %s", channel, ts, exc.error)

    async def _notice(self, token: str | None, channel: str, user: str, text: str) -> None:
        try:
            await self.web.call("chat_postEphemeral", token, channel=channel, user=user, text=text)
        except SlackError as exc:
            logger.warning("Slack chat.postEphemeral in %s failed: %s", channel, exc.error)

    # -- routes --------------------------------------------------------------------
    def routes(self) -> list[BaseRoute]:
        from .routes import slack_routes

        return list(slack_routes(self))


def _failure(exc: SlackError, what: str) -> ProviderFailure:
    if exc.error == "ratelimited":
        return ProviderFailure(f"Slack rate limited {what}", retry_after=exc.retry_after or 5.0)
    logger.warning("Slack refused %s: %s", what, exc.error)
    return ProviderFailure(f"Slack refused {what} ({exc.method}: {exc.error})")
