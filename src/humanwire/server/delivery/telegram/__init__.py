"""The telegram channel: a Telegram bot (python-telegram-bot, the ``telegram`` extra).

``channel.TELEGRAM`` is the channel's registration (``delivery/chat.py`` lists it); the
provider (``provider.TelegramProvider``) and its webhook route (``routes``) are imported
only when ``[telegram]`` is configured, so the SDK stays unloaded otherwise.
"""

from .channel import TELEGRAM

__all__ = ["TELEGRAM"]
