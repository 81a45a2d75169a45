"""The fake Teams' world and records, apart from its HTTP handling (as moto keeps a
service's backend apart from its responses): the bot's registration (app id, secret,
tenant), the Bot Framework's signing key and its key set, the people, their personal
conversations with the bot, and the activities in them. Every change goes through
:class:`TeamsState`'s methods under its lock; ``responses.py`` and ``people.py`` only
call them.
"""

from __future__ import annotations

import base64
import itertools
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from .certificates import AssertionRefused, Certificates

__all__ = [
    "ISSUER",
    "FakeActivity",
    "FakeConversation",
    "FakeTeamsUser",
    "TeamsError",
    "TeamsState",
    "jwk_of",
]

ISSUER = "https://api.botframework.com"
"""The ``iss`` of every token the Bot Framework signs for a bot."""
SCOPE = "https://api.botframework.com/.default"
TOKEN_SECONDS = 3600


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwk_of(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    """The public half of ``key`` as a JWK of the Bot Framework's key set."""
    public = key.public_key().public_numbers()
    return {
        "kty": "RSA",
        "use": "sig",
        "kid": kid,
        "n": _b64(public.n),
        "e": _b64(public.e),
        "endorsements": ["msteams"],
    }


class TeamsError(Exception):
    """What the Connector answers a request it refuses."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


@dataclass
class FakeTeamsUser:
    id: str
    """The Teams user id (``29:…``)."""
    name: str
    aad_object_id: str

    def account(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "aadObjectId": self.aad_object_id}


@dataclass
class FakeConversation:
    id: str
    user: str
    """The person of this personal (one-to-one) conversation with the bot."""
    installed: bool = True


@dataclass
class FakeActivity:
    """An activity in a conversation: the bot's (sent through the Connector) or a
    person's (sent to the bot)."""

    id: str
    conversation_id: str
    from_id: str
    body: dict[str, Any]
    edits: list[dict[str, Any]] = field(default_factory=list)
    """Every later version (an update through the Connector, a card an invoke's answer
    put in place), in order; the activity shows the last."""
    deleted: bool = False
    reply_to: str | None = None

    @property
    def current(self) -> dict[str, Any]:
        return self.edits[-1] if self.edits else self.body

    @property
    def text(self) -> str:
        return str(self.current.get("text") or "")

    def cards(self) -> list[dict[str, Any]]:
        """The Adaptive Cards it shows now."""
        return [
            attachment.get("content") or {}
            for attachment in self.current.get("attachments") or ()
            if attachment.get("contentType") == "application/vnd.microsoft.card.adaptive"
        ]

    def actions(self) -> list[dict[str, Any]]:
        """The card actions it shows now (``Action.Execute``, ``Action.Submit``…)."""
        return [action for card in self.cards() for action in card.get("actions") or ()]


class TeamsState:
    """The fake's state: one bot registration in one tenant, and what was done."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.app_id = str(uuid.uuid4())
        self.app_password = secrets.token_urlsafe(24)
        self.certificates = Certificates(self.app_id)
        """The certificates uploaded to the registration (none until a test adds one)."""
        self.tenant_id = str(uuid.uuid4())
        self.bot_id = f"28:{self.app_id}"
        self.signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.key_id = secrets.token_hex(8)
        self.service_url = ""
        """Where the Connector is (the server sets it: ``<base>/amer/``), regional as the
        real one is."""
        self.users: dict[str, FakeTeamsUser] = {}
        self.conversations: dict[str, FakeConversation] = {}
        self.activities: list[FakeActivity] = []
        self.tokens: dict[str, float] = {}
        """Bot tokens issued (client credentials), with when each expires."""
        self.requests: list[tuple[str, str, Any]] = []
        self.violations: list[str] = []
        self.errors: list[str] = []
        self.answers: list[tuple[dict[str, Any], int, Any]] = []
        """Each activity the fake sent the bot, with the status and body it was answered."""
        self._ids = itertools.count(1)

    # -- the key set -------------------------------------------------------------------
    def jwks(self) -> dict[str, Any]:
        return {"keys": [jwk_of(self.signing_key, self.key_id)]}

    # -- bot tokens --------------------------------------------------------------------
    def issue_token(self, client_id: str, client_secret: str, scope: str) -> str:
        if client_id != self.app_id or not secrets.compare_digest(
            client_secret.encode(), self.app_password.encode()
        ):
            raise TeamsError(401, "invalid_client", "AADSTS7000215: Invalid client secret")
        if scope != SCOPE:
            raise TeamsError(400, "invalid_scope", f"AADSTS70011: the scope must be {SCOPE}")
        with self.lock:
            token = secrets.token_urlsafe(32)
            self.tokens[token] = time.time() + TOKEN_SECONDS
            return token

    def issue_token_by_assertion(
        self, client_id: str, assertion: str, scope: str, audience: str
    ) -> str:
        """A bot token for a client assertion signed with an uploaded certificate's key."""
        try:
            self.certificates.check(assertion, client_id, audience)
        except AssertionRefused as refused:
            raise TeamsError(401, "invalid_client", refused.message) from None
        if scope != SCOPE:
            raise TeamsError(400, "invalid_scope", f"AADSTS70011: the scope must be {SCOPE}")
        with self.lock:
            token = secrets.token_urlsafe(32)
            self.tokens[token] = time.time() + TOKEN_SECONDS
            return token

    def token_valid(self, token: str) -> bool:
        with self.lock:
            expires = self.tokens.get(token)
            return expires is not None and expires > time.time()

    # -- the world ---------------------------------------------------------------------
    def add_user(self, name: str) -> FakeTeamsUser:
        with self.lock:
            user = FakeTeamsUser(
                id=f"29:1{secrets.token_urlsafe(30)}", name=name, aad_object_id=str(uuid.uuid4())
            )
            self.users[user.id] = user
            return user

    def personal_conversation(self, user: FakeTeamsUser) -> FakeConversation:
        with self.lock:
            for conversation in self.conversations.values():
                if conversation.user == user.id:
                    return conversation
            conversation = FakeConversation(id=f"a:1{secrets.token_urlsafe(40)}", user=user.id)
            self.conversations[conversation.id] = conversation
            return conversation

    def conversation(self, conversation_id: str) -> FakeConversation:
        with self.lock:
            found = self.conversations.get(conversation_id)
            if found is None or not found.installed:
                raise TeamsError(404, "ConversationNotFound", "Conversation not found.")
            return found

    def next_id(self) -> str:
        return f"{int(time.time() * 1000)}{next(self._ids):04d}"

    def add_activity(
        self, conversation_id: str, from_id: str, body: dict[str, Any], reply_to: str | None = None
    ) -> FakeActivity:
        with self.lock:
            activity = FakeActivity(
                self.next_id(), conversation_id, from_id, body, reply_to=reply_to
            )
            self.activities.append(activity)
            return activity

    def activity(self, conversation_id: str, activity_id: str) -> FakeActivity:
        with self.lock:
            for activity in self.activities:
                if activity.id == activity_id and activity.conversation_id == conversation_id:
                    if activity.deleted:
                        break
                    return activity
            raise TeamsError(404, "ActivityNotFound", "Activity not found.")
