"""Every tunable of the service in one place, so tests can make windows and retries fast."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_HUMAN_PHONE = "+12025550100"
"""The inbox's default human on the embedded service; never handed out as reservable."""
DEFAULT_HUMAN_SLACK = "U0HUMAN0001"
SHARED_SMS_NUMBER = "+12025550199"
"""The shared number texts come from when the account has no reserved number."""
SHARED_WHATSAPP_NUMBER = "+12025550198"
SHARED_SLACK_WORKSPACE = "T0SHARED01"


@dataclass(frozen=True)
class TwilioConfig:
    """Twilio credentials and senders (PROVIDERS.md "Configuration")."""

    account_sid: str
    auth_token: str = field(repr=False)
    api_base: str = "https://api.twilio.com"
    sms_from: str | None = None
    """The shared SMS number (E.164); calls go out from it too."""
    whatsapp_from: str | None = None
    """The shared WhatsApp sender (E.164, without ``whatsapp:``)."""
    whatsapp_templates: Mapping[str, str] = field(default_factory=dict)
    """``notification``, ``request``, ``form`` → Content template SID (``HX…``)."""
    numbers: tuple[str, ...] = ()
    """The pool of the operator's numbers that accounts may reserve."""
    buy_numbers: bool = False


@dataclass(frozen=True)
class SlackConfig:
    bot_token: str = field(repr=False)
    signing_secret: str = field(repr=False)
    api_base: str = "https://slack.com/api"
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)


@dataclass
class ServiceConfig:
    db_path: str = ":memory:"
    """SQLite file, or ``:memory:`` for tests."""
    public_url: str = "http://127.0.0.1:8765"
    """Base address as seen by clients and browsers: form links are built from it."""
    local_mode: bool = True
    """Loopback webhook targets allowed (the default when serving on loopback)."""
    sandbox_enabled: bool = True

    webhook_timeout: float = 10.0
    webhook_retry_base: float = 1.0
    """First retry delay; doubles each try."""
    webhook_max_attempts: int = 8
    webhook_concurrency: int = 32
    """Deliveries in flight at once; the rest wait in the outbox."""

    rate_limit_requests: int = 600
    rate_limit_window: float = 60.0
    spam_recipients: int = 25
    """The same text to this many distinct recipients inside ``spam_window`` suspends."""
    spam_window: float = 600.0

    max_body_bytes: int = 1 << 20
    idempotency_ttl: float = 24 * 3600.0
    phone_call_limit: float = 300.0
    call_wait_limit: float = 3600.0
    """``POST /calls`` with ``waitForCallEnd``: the generous cap on holding for the end;
    past it the call is returned ``pending`` (it goes on; poll or await the webhook)."""
    max_status_wait: float = 60.0
    twilio: TwilioConfig | None = None
    slack: SlackConfig | None = None
    voice_model: str | None = None
    """The voice agent's chat model, as ``init_chat_model`` takes it."""
    voice_chat_model: Any = None
    """A chat model object; takes precedence over ``voice_model`` (tests, embedding)."""
    unavailable_retry_after: float = 1.0
    """``Retry-After`` (seconds) of the 503 a stopping service answers held requests with."""
