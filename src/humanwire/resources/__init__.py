"""The resources of a client, each endpoint written once for sync and async."""

from ._base import AsyncMode, ModeT, Resource, SyncMode, endpoint
from .approvals import Approvals
from .audit import Audit
from .calls import Calls
from .channels import Channels
from .forms import Forms
from .interactions import Interactions
from .messages import Messages
from .numbers import Numbers
from .people import People
from .phone import Phone
from .sandbox import Sandbox
from .telegram import Telegram, TelegramBots
from .webhooks import Webhooks

__all__ = [
    "Approvals",
    "AsyncMode",
    "Audit",
    "Calls",
    "Channels",
    "Forms",
    "Interactions",
    "Messages",
    "ModeT",
    "Numbers",
    "People",
    "Phone",
    "Resource",
    "Sandbox",
    "SyncMode",
    "Telegram",
    "TelegramBots",
    "Webhooks",
    "endpoint",
]
