"""Accounts' own Slack workspaces: the bot tokens OAuth installs hand over, and the
one-time ``state`` of an install under way.

A workspace belongs to one account at a time (its events and replies must reach that
account only): a second account installing it is refused until the first revokes. Tokens
are stored encrypted (Fernet, with a key derived from ``slack.client_secret``), are never
returned by any endpoint and never logged; rotating the client secret means reinstalling.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...store.protocol import Store

__all__ = ["INSTALL_SCOPE", "STATE_SCOPE", "InstallRefused", "Installation", "SlackInstalls"]

logger = logging.getLogger("humanwire.slack")

INSTALL_SCOPE = "slack-install"
"""provider_state scope: team id → the installation (token encrypted)."""
STATE_SCOPE = "slack-oauth-state"
"""provider_state scope: OAuth ``state`` → the account installing."""
STATE_TTL = 600.0
_STATE = re.compile(r"[A-Za-z0-9_-]{16,128}")
"""What ``new_state`` makes (``secrets.token_urlsafe``), with room to spare."""


@dataclass(frozen=True)
class Installation:
    """What is shown of an installation: never its token."""

    team_id: str
    team_name: str
    account_id: str
    bot_user_id: str
    installed_at: float


class InstallRefused(Exception):
    """The workspace cannot be installed for this account (another account holds it, or
    it is the shared workspace)."""


def _fernet(secret: str) -> Any:
    from cryptography.fernet import Fernet

    key = hmac.new(secret.encode(), b"humanwire slack bot tokens", hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


class SlackInstalls:
    def __init__(self, store: Store, secret: str | None) -> None:
        self._store = store
        self._fernet = _fernet(secret) if secret else None

    # -- OAuth state -----------------------------------------------------------------
    async def new_state(self, account_id: str) -> str:
        """An unguessable, single-use ``state`` for ``account_id``'s install."""
        now = time.time()
        await self._store.delete_provider_state_before(STATE_SCOPE, now - STATE_TTL)
        state = secrets.token_urlsafe(32)
        await self._store.put_provider_state(
            STATE_SCOPE, state, {"account": account_id, "at": now}, now
        )
        return state

    async def state_account(self, state: str, *, consume: bool) -> str | None:
        """The account a live ``state`` was made for (None: unknown or expired);
        ``consume`` uses it up."""
        if not _STATE.fullmatch(state):
            return None  # not one of ours (a NUL in it would not even reach PostgreSQL)
        data = await self._store.get_provider_state(STATE_SCOPE, state)
        if data is None:
            return None
        if consume:
            await self._store.delete_provider_state(STATE_SCOPE, state)
        if float(data.get("at", 0) or 0) + STATE_TTL < time.time():
            return None
        return str(data["account"])

    # -- installations ---------------------------------------------------------------
    async def save(
        self,
        *,
        account_id: str,
        team_id: str,
        team_name: str,
        token: str,
        bot_user_id: str,
        shared_team: str | None,
    ) -> Installation:
        if self._fernet is None:
            raise InstallRefused("Slack OAuth is not configured")
        if shared_team and team_id == shared_team:
            raise InstallRefused(
                "this is the shared workspace: its bot is already there for every account"
            )
        holder = await self.team_account(team_id)
        if holder is not None and holder != account_id:
            raise InstallRefused(
                "this workspace is connected to another humanwire account; it must "
                "disconnect it first"
            )
        now = time.time()
        sealed = self._fernet.encrypt(token.encode()).decode()
        await self._store.put_provider_state(
            INSTALL_SCOPE,
            team_id,
            {
                "account": account_id,
                "team_name": team_name,
                "bot_user_id": bot_user_id,
                "token": sealed,
                "installed_at": now,
            },
            now,
        )
        return Installation(team_id, team_name, account_id, bot_user_id, now)

    async def _data(self, team_id: str) -> dict[str, Any] | None:
        return await self._store.get_provider_state(INSTALL_SCOPE, team_id) if team_id else None

    async def team_account(self, team_id: str) -> str | None:
        data = await self._data(team_id)
        return str(data["account"]) if data is not None else None

    async def get(self, team_id: str) -> Installation | None:
        data = await self._data(team_id)
        return _installation(team_id, data) if data is not None else None

    async def token(self, team_id: str) -> str | None:
        """The bot token of ``team_id``'s installation (None: none, or not readable
        with this client secret)."""
        data = await self._data(team_id)
        if data is None or self._fernet is None:
            return None
        from cryptography.fernet import InvalidToken

        try:
            return str(self._fernet.decrypt(str(data["token"]).encode()).decode())
        except InvalidToken:
            logger.warning(
                "the Slack token of workspace %s cannot be read with this client secret: "
                "reinstall the app there",
                team_id,
            )
            return None

    async def of_account(self, account_id: str) -> list[Installation]:
        return sorted(
            (
                _installation(team, data)
                for team, data in await self._store.provider_states(INSTALL_SCOPE)
                if data.get("account") == account_id
            ),
            key=lambda found: found.installed_at,
        )

    async def all(self) -> list[Installation]:
        return [
            _installation(team, data)
            for team, data in await self._store.provider_states(INSTALL_SCOPE)
        ]

    async def revoke(self, team_id: str, *, account_id: str | None = None) -> bool:
        """Forgets ``team_id``'s token (only ``account_id``'s, when given). True when
        there was one."""
        data = await self._data(team_id)
        if data is None or (account_id is not None and data.get("account") != account_id):
            return False
        await self._store.delete_provider_state(INSTALL_SCOPE, team_id)
        return True


def _installation(team_id: str, data: dict[str, Any]) -> Installation:
    return Installation(
        team_id=team_id,
        team_name=str(data.get("team_name") or team_id),
        account_id=str(data["account"]),
        bot_user_id=str(data.get("bot_user_id") or ""),
        installed_at=float(data.get("installed_at") or 0.0),
    )
