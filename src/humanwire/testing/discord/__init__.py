"""A contract fake of Discord, for testing a humanwire deployment (or anything that talks
to Discord's REST API and takes its HTTP interactions) offline. Needs ``humanwire[discord]``
(``cryptography`` signs the interactions; ``jsonschema`` checks requests).

::

    from humanwire.testing.discord import discord_fake

    with discord_fake() as discord:            # a local Discord on a free loopback port
        fake = discord.fake                    # one app, its bot in fake.guild
        ada = fake.add_user("ada")             # shares the guild: DMs reach her
        # point the code under test at it: the REST base discord.api_base,
        # fake.bot_token, fake.application_id, fake.public_key (hex)
        fake.interactions_url = "http://127.0.0.1:8000/providers/discord/interactions"
        ...
        message = fake.posted_to(ada)[0]
        fake.click(message, message.custom_ids()[0], ada)   # ada presses the first button
        assert fake.violations == [] and fake.errors == []

**What it checks.** Every REST request (under ``/api/v10``) against Discord's published
description (``discord_openapi.subset.json``, from discord/discord-api-spec, MIT, licence
beside it): an operation it lists, ``Authorization: Bot <token>`` where the operation
needs it, the JSON body held to the operation's request schema (ids sent as integers
taken, as Discord takes them) and to the limits the documentation states in prose
(content ≤ 2,000 characters, ≤ 5 rows of ≤ 5 buttons, ``custom_id`` 1–100 characters and
unique, labels ≤ 80, a modal's title ≤ 45 and ≤ 5 inputs). Refusals are Discord's
``{"code", "message"}`` (50035 for a body the description refuses, also recorded in
``fake.violations``; 50278 for a DM to someone sharing no server with the app; 10003,
10008, 10062, 40060…). The fake's own answers are held to the description's response
schemas, and the app's answers to interactions to the interaction callback's schema and
Discord's 3 s (``fake.errors``).

**Played operations:** ``GET /users/@me``, ``GET /oauth2/applications/@me``,
``GET /users/{id}``, ``POST /users/@me/channels`` (a DM), ``POST /channels/{id}/messages``,
``PATCH /channels/{id}/messages/{id}``, ``POST /interactions/{id}/{token}/callback``
(``?with_response=1`` answers the ``InteractionCallbackResponse``), followups and the
original response under ``/webhooks/{application}/{token}`` (for 15 minutes).

**Test controls:** ``add_user`` (``in_guild=False``: no mutual server), ``add_channel``;
``posted_to(user_or_channel)``, ``state.messages`` (each with ``edits``),
``state.interactions`` (what was sent, the answer and how long it took), ``state.requests``,
``modals``, ``violations``, ``errors``; people: ``click`` / ``aclick`` (a button),
``submit`` / ``asubmit`` (a modal the app opened), ``ping``, ``post_signed`` (any body,
with a given signature or timestamp); ``wait_for(predicate)``.
"""

from __future__ import annotations

from .fake import FakeDiscord
from .people import FakeModal
from .server import DiscordFakeServer, discord_fake
from .spec import DiscordSpec, SpecViolation, load_spec
from .state import FakeChannel, FakeDiscordMessage, FakeGuild, FakeInteraction, FakeUser

__all__ = [
    "DiscordFakeServer",
    "DiscordSpec",
    "FakeChannel",
    "FakeDiscord",
    "FakeDiscordMessage",
    "FakeGuild",
    "FakeInteraction",
    "FakeModal",
    "FakeUser",
    "SpecViolation",
    "discord_fake",
    "load_spec",
]
