"""The discord channel: a Discord application's bot (discord.py, REST only, the
``discord`` extra), answered through the service's own interactions endpoint.

``channel.DISCORD`` is the channel's registration (``delivery/chat.py`` lists it); the
provider (``provider.DiscordProvider``) and its interactions route (``routes``) are
imported only when ``[discord]`` is configured, so the SDK stays unloaded otherwise.
"""

from .channel import DISCORD

__all__ = ["DISCORD"]
