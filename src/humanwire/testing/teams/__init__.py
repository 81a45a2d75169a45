"""A contract fake of Microsoft Teams (the Bot Framework Connector and what Teams sends a
bot), for testing a humanwire deployment, or any bot, offline. Needs
``humanwire[teams]`` (PyJWT and ``cryptography`` sign the activities; ``jsonschema``
checks requests).

::

    from humanwire.testing.teams import teams_fake

    with teams_fake() as teams:              # a local Teams on a free loopback port
        fake = teams.fake                    # one bot registration in one tenant
        ada = fake.add_user("ada")
        # point the bot at it: fake.app_id, fake.app_password, fake.tenant_id, the
        # token endpoint teams.token_url, the key set teams.jwks_url
        fake.messaging_endpoint = "http://127.0.0.1:8000/providers/teams/messages"
        fake.install(ada)                    # ada installs the app: installationUpdate
        ...
        card = fake.sent_to(ada)[0]
        fake.execute(card, ada, "approve")   # she presses an Action.Execute
        assert fake.violations == [] and fake.errors == []

**What it checks.** Every Connector request (under the service URL) against the
published Connector description (``botframework_connector_v3.subset.json``, from
microsoft/botbuilder-dotnet, MIT, licence beside it), strictly for the objects it
describes (an unknown property is refused: the real Connector would ignore a typo); a
bearer token the fake's token endpoint issued (client credentials of the app id and
secret, or a client assertion signed with the key of a certificate ``add_certificate``
uploaded: header ``alg`` RS256 or PS256 and ``x5t#S256`` or ``x5t``, the signature, ``aud``
the token endpoint, ``iss`` = ``sub`` = the app id, a fresh ``jti``, ``nbf`` and ``exp``
against its clock, which ``clock_skew`` moves; scope
``https://api.botframework.com/.default``); every Adaptive Card the bot
attaches or answers an invoke with, against Adaptive Cards 1.5 for the elements and
actions it knows (``cards.py``), as strictly. Refusals are the description's
``ErrorResponse`` (also in ``fake.violations`` when the description refuses the body).
The fake's answers are held to the response schemas; the bot's answers to the
activities it is sent are recorded (``state.answers``), and a failed one, or an invoke
answered with no card response, is in ``fake.errors``.

**Played:** ``POST /v3/conversations``, ``POST /v3/conversations/{id}/activities``,
``POST``/``PUT``/``DELETE /v3/conversations/{id}/activities/{id}``; ``POST
/{tenant}/oauth2/v2.0/token``; ``GET /v1/.well-known/keys`` and ``…/openidconfiguration``.

**People:** ``install`` (an ``installationUpdate``: the bot learns the person's
conversation), ``say`` (a message in the personal chat), ``execute`` (an
``Action.Execute`` of a card, its inputs filled; the card in the answer replaces it),
each signed by the fake's key; ``token(...)`` any token (another key, kid, issuer,
audience, expiry, service URL), ``post(body, token)`` any body with it.
"""

from __future__ import annotations

from .certificates import make_certificate
from .fake import FakeTeams
from .server import TeamsFakeServer, teams_fake
from .spec import ConnectorSpec, SpecViolation, load_spec
from .state import FakeActivity, FakeConversation, FakeTeamsUser

__all__ = [
    "ConnectorSpec",
    "FakeActivity",
    "FakeConversation",
    "FakeTeams",
    "FakeTeamsUser",
    "SpecViolation",
    "TeamsFakeServer",
    "load_spec",
    "make_certificate",
    "teams_fake",
]
