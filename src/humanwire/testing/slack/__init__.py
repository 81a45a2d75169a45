"""A contract fake of Slack, for testing a humanwire deployment (or anything that talks to
Slack's Web API and takes its events) offline. Needs ``humanwire[slack]`` (``slack_sdk``
signs the events and clicks; ``jsonschema`` checks requests against the description).

::

    from humanwire.testing.slack import slack_fake

    with slack_fake() as slack:                 # a local Slack on a free loopback port
        fake = slack.fake                       # one app, installed in fake.workspace
        ada = fake.add_member("ada")
        deploys = fake.add_channel("deploys", members=[ada])   # the bot is in it
        # point the code under test at it: api_base = slack.api_base,
        # bot_token = fake.workspace.bot_token, signing_secret = fake.signing_secret
        fake.events_url = "http://127.0.0.1:8000/providers/slack/events"
        fake.interactions_url = "http://127.0.0.1:8000/providers/slack/interactions"
        ...
        fake.reply(fake.posted_to(ada)[0], ada, "yes")          # ada answers in the thread
        fake.click(fake.posted_to(ada)[1], "humanwire_approve", ada)
        fake.wait_idle()
        assert fake.violations == []            # the code never sent Slack a bad request

**What it checks.** Every Web API request (``/api/<method>``), against Slack's published
description (``slack_web_openapi_v2.subset.json``, from slack-api-specs, MIT, licence
beside it): a method it lists, parameters it declares (from the query, a form body or a
JSON body), required ones present, each of its type, ``blocks`` held to the description
and to Block Kit's documented limits; a live bot token (``Authorization: Bearer``) with
one of the method's scopes; a message with ``text`` or ``blocks``; the bot a member
where it posts; only its own messages updated; OAuth's client credentials, single-use
codes and ``redirect_uri``. Refusals are Slack's ``{"ok": false, "error": …}`` (429 with
``Retry-After`` for ``rate_limit``); malformed requests are recorded in
``fake.violations``. The fake's answers are held to the description's response schemas
and its events to the Events API's envelope schema and topics (``fake.errors``).

**Played methods:** ``auth.test``, ``conversations.open``, ``chat.postMessage``,
``chat.update``, ``chat.postEphemeral``, ``oauth.v2.access``; the consent page
``/oauth/v2/authorize`` (allowed at once, for ``fake.next_install_team`` or a new
workspace; ``fake.authorize(url)`` follows it and returns where Slack redirects).

**Test controls** (``FakeSlack``; thread-safe):

- world: ``workspace`` (the shared one), ``add_workspace``, ``add_member``,
  ``add_channel``, ``workspaces``, ``members``, ``channels``;
- records: ``messages`` (``FakeSlackMessage``: team, channel, ts, text, blocks,
  thread_ts, user, ``updates``), ``posted_to(channel_or_member)``, ``message(channel, ts)``,
  ``requests`` (method, params, token), ``ephemerals``, ``event_deliveries`` (envelope and
  ``attempts`` with status and elapsed time), ``interactions``, ``authorizations``,
  ``violations``, ``errors``;
- members: ``post``, ``reply``, ``edit``, ``bot_post`` (another app), ``click``,
  ``uninstall``; Slack itself: ``url_verification``, ``redeliver`` (the next retry of an
  event), ``post_signed`` (any body, signed or with a given signature / timestamp);
- failures: ``rate_limit(method, times, retry_after)``, ``fail_next(method, error)``,
  ``delay(seconds)``; ``wait_for(predicate)``, ``wait_idle()``, ``reset()``.

Events not acknowledged with a 2xx within ``ack_timeout`` (3 s) are retried after
``retry_delays`` (0.2, 0.5, 1 s; Slack waits 1 and 5 minutes) with ``X-Slack-Retry-Num``
and ``X-Slack-Retry-Reason``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .fake import (
    DEFAULT_SCOPES,
    FakeAttempt,
    FakeAuthorization,
    FakeChannel,
    FakeEphemeral,
    FakeEventDelivery,
    FakeInteraction,
    FakeMember,
    FakeRequest,
    FakeSlack,
    FakeSlackMessage,
    FakeWorkspace,
    Violation,
)
from .server import SlackFakeServer
from .spec import SlackSpec, SpecViolation, load_spec

__all__ = [
    "DEFAULT_SCOPES",
    "FakeAttempt",
    "FakeAuthorization",
    "FakeChannel",
    "FakeEphemeral",
    "FakeEventDelivery",
    "FakeInteraction",
    "FakeMember",
    "FakeRequest",
    "FakeSlack",
    "FakeSlackMessage",
    "FakeWorkspace",
    "SlackFakeServer",
    "SlackSpec",
    "SpecViolation",
    "Violation",
    "load_spec",
    "slack_fake",
]


@contextmanager
def slack_fake(fake: FakeSlack | None = None) -> Iterator[SlackFakeServer]:
    """``with slack_fake() as slack:`` — the fake (``slack.fake``) served at
    ``slack.api_base`` for the block."""
    server = SlackFakeServer(fake)
    server.start()
    try:
        yield server
    finally:
        server.stop()
