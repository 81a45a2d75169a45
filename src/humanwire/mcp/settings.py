"""What the MCP server offers and how it waits: flags, then ``HUMANWIRE_*`` variables.

- recipients: ``--to`` / ``--whatsapp-to`` / ``--slack-to`` / ``--email-to`` /
  ``--telegram-to`` / ``--teams-to`` / ``--discord-to``, else ``HUMANWIRE_SMS_TO`` /
  ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO`` / ``HUMANWIRE_EMAIL_TO`` /
  ``HUMANWIRE_TELEGRAM_TO`` / ``HUMANWIRE_TEAMS_TO`` / ``HUMANWIRE_DISCORD_TO``, else
  (embedded service) the inbox's default human; ``--person`` (``HUMANWIRE_PERSON``): a
  person of the people directory (``per_…``), offered ``ask_human_person`` and
  ``notify_human_person`` (asked wherever they are; ``--fallback-after``,
  ``HUMANWIRE_MCP_FALLBACK_AFTER``: seconds before their next address); ``--expose-recipients``
  (``HUMANWIRE_MCP_EXPOSE_RECIPIENTS=1``) lets the model name one;
- ``--wait-time`` (``HUMANWIRE_MCP_WAIT_TIME``, 300 s): how long the service listens for
  an answer; ``--follow-up-time`` (``HUMANWIRE_MCP_FOLLOW_UP_TIME``, none) after that;
- ``--client-timeout`` (``HUMANWIRE_MCP_CLIENT_TIMEOUT``, 60 s; 0: no limit known): the
  longest the MCP client waits for a tool; ``--progress-interval``
  (``HUMANWIRE_MCP_PROGRESS_INTERVAL``, 10 s) between progress notifications;
- ``--channel-id`` (``HUMANWIRE_MCP_CHANNEL_IDS``, comma-separated): channel cards;
- ``--form FILE.json`` (``HUMANWIRE_MCP_FORM``): a fixed form, else the model designs
  it; ``--form-channel`` (``HUMANWIRE_MCP_FORM_CHANNEL``, sms);
- ``HUMANWIRE_MCP_STATE_KEY`` (at least 32 bytes; none: a random key per server): the
  key a gated tool's continuation state is signed with, shared by the servers that may
  continue one another's calls.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from humanwire._tool_kinds import check_fallback_after, check_person
from humanwire._tooling import CHANNEL_NAMES, MessageChannel
from humanwire.approval import check_follow_up_time, check_wait_time
from humanwire.types import FormField

__all__ = [
    "CHANNELS",
    "DEFAULT_CLIENT_TIMEOUT",
    "DEFAULT_PROGRESS_INTERVAL",
    "DEFAULT_WAIT_TIME",
    "FixedForm",
    "McpSettings",
    "SettingsError",
]

CHANNELS = cast("tuple[MessageChannel, ...]", tuple(CHANNEL_NAMES))
"""The message channels, in the order the tools are listed (the tool table's)."""
DEFAULT_WAIT_TIME = 300.0
"""Seconds the service listens for the answer to an ``ask`` or a form."""
DEFAULT_CLIENT_TIMEOUT = 60.0
"""Seconds an MCP client is known to wait for a request (the common default)."""
DEFAULT_PROGRESS_INTERVAL = 10.0


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the flag or variable."""


@dataclass(frozen=True)
class FixedForm:
    """A form fixed by configuration: the model only adds an optional link message."""

    title: str
    fields: list[FormField]
    description: str | None = None

    @classmethod
    def load(cls, path: str | Path) -> FixedForm:
        """``{"title", "fields": [...], "description"?}`` from a JSON file (fields as the
        service's form fields)."""
        try:
            data = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SettingsError(f"form file {path}: {exc}") from None
        if not isinstance(data, dict) or not data.get("title") or not data.get("fields"):
            raise SettingsError(f"form file {path}: needs a title and a list of fields")
        try:
            fields = [FormField.model_validate(item) for item in data["fields"]]
        except Exception as exc:  # pydantic's message names the field
            raise SettingsError(f"form file {path}: {exc}") from None
        return cls(title=str(data["title"]), fields=fields, description=data.get("description"))


@dataclass(frozen=True)
class McpSettings:
    """What ``humanwire mcp`` (and the service's ``/mcp``) offers, and how it waits."""

    sms_to: str | None = None
    whatsapp_to: str | None = None
    slack_to: str | None = None
    email_to: str | None = None
    telegram_to: str | None = None
    teams_to: str | None = None
    discord_to: str | None = None
    person: str | None = None
    """A person of the people directory (``per_…``): the person tools are offered."""
    fallback_after: float | None = None
    """Seconds before the person tools move on to the person's next address."""
    expose_recipients: bool = False
    wait_time: float = DEFAULT_WAIT_TIME
    follow_up_time: float | None = None
    client_timeout: float | None = DEFAULT_CLIENT_TIMEOUT
    """The longest a client is known to wait for a tool; ``None``: no limit known."""
    progress_interval: float = DEFAULT_PROGRESS_INTERVAL
    channel_ids: tuple[str, ...] = ()
    form: FixedForm | None = None
    form_channel: MessageChannel = "sms"
    wait_for_call_end: bool = True
    metadata: Mapping[str, str] = field(default_factory=dict)
    state_key: str | bytes | None = field(default=None, repr=False)
    """Signs a gated tool's continuation state (``humanwire.mcp.gate``)."""

    def __post_init__(self) -> None:
        try:
            if check_wait_time(self.wait_time) is None:
                raise ValueError("wait_time is required")
            check_follow_up_time(self.follow_up_time)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        try:
            if self.person is not None:
                check_person(self.person, name="HUMANWIRE_PERSON (--person)")
            check_fallback_after(self.fallback_after)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        if self.client_timeout is not None and self.client_timeout <= 0:
            raise SettingsError("client_timeout must be more than 0 seconds (or none)")
        if self.progress_interval <= 0:
            raise SettingsError("progress_interval must be more than 0 seconds")
        if self.form_channel not in CHANNELS:
            raise SettingsError(
                "form_channel must be sms, whatsapp, slack, email, telegram, teams or discord"
            )
        if self.state_key is not None:
            key = self.state_key
            if len(key.encode() if isinstance(key, str) else key) < 32:
                raise SettingsError(
                    "HUMANWIRE_MCP_STATE_KEY (state_key) must be at least 32 bytes: "
                    'python -c "import secrets; print(secrets.token_hex(32))"'
                )

    def configured_recipient(self, channel: str) -> str | None:
        """The recipient set for ``channel`` (whatsapp falls back to the sms number; a
        channel with no setting of its own has none here: its variable, or the default
        human, applies)."""
        given: str | None = getattr(self, f"{channel}_to", None)
        if channel == "whatsapp":
            return given or self.sms_to
        return given

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **flags: Any) -> McpSettings:
        """Flags (``None``: not given) over ``HUMANWIRE_*`` variables over defaults."""
        env = os.environ if env is None else env

        def pick(flag: str, variable: str) -> Any:
            value = flags.get(flag)
            return value if value is not None else (env.get(variable) or None)

        def seconds(flag: str, variable: str, default: float | None) -> float | None:
            raw = pick(flag, variable)
            if raw is None:
                return default
            try:
                value = float(raw)
            except (TypeError, ValueError):
                option = "--" + flag.replace("_", "-")
                raise SettingsError(f"{variable} ({option}): not a number: {raw!r}") from None
            return value

        timeout = seconds("client_timeout", "HUMANWIRE_MCP_CLIENT_TIMEOUT", DEFAULT_CLIENT_TIMEOUT)
        listed = env.get("HUMANWIRE_MCP_CHANNEL_IDS", "").split(",")
        ids: Sequence[str] = flags.get("channel_ids") or [i.strip() for i in listed if i.strip()]
        form_path = pick("form", "HUMANWIRE_MCP_FORM")
        expose_env = env.get("HUMANWIRE_MCP_EXPOSE_RECIPIENTS", "").lower()
        expose = flags.get("expose_recipients") or expose_env in ("1", "true", "yes", "on")
        return cls(
            sms_to=pick("to", "HUMANWIRE_SMS_TO"),
            whatsapp_to=pick("whatsapp_to", "HUMANWIRE_WHATSAPP_TO"),
            slack_to=pick("slack_to", "HUMANWIRE_SLACK_TO"),
            email_to=pick("email_to", "HUMANWIRE_EMAIL_TO"),
            telegram_to=pick("telegram_to", "HUMANWIRE_TELEGRAM_TO"),
            teams_to=pick("teams_to", "HUMANWIRE_TEAMS_TO"),
            discord_to=pick("discord_to", "HUMANWIRE_DISCORD_TO"),
            person=pick("person", "HUMANWIRE_PERSON"),
            fallback_after=seconds("fallback_after", "HUMANWIRE_MCP_FALLBACK_AFTER", None),
            expose_recipients=bool(expose),
            wait_time=_given(seconds("wait_time", "HUMANWIRE_MCP_WAIT_TIME", DEFAULT_WAIT_TIME)),
            follow_up_time=seconds("follow_up_time", "HUMANWIRE_MCP_FOLLOW_UP_TIME", None),
            client_timeout=timeout or None,
            progress_interval=_given(
                seconds(
                    "progress_interval",
                    "HUMANWIRE_MCP_PROGRESS_INTERVAL",
                    DEFAULT_PROGRESS_INTERVAL,
                )
            ),
            channel_ids=tuple(dict.fromkeys(ids)),
            form=FixedForm.load(form_path) if form_path else None,
            form_channel=pick("form_channel", "HUMANWIRE_MCP_FORM_CHANNEL") or "sms",
            wait_for_call_end=not flags.get("no_wait_for_call_end", False),
            state_key=env.get("HUMANWIRE_MCP_STATE_KEY") or None,
        )


def _given(value: float | None) -> float:
    """A setting with a default is never ``None``."""
    assert value is not None
    return value
