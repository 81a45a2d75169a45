"""The teams channel: a Microsoft Teams bot an operator registers, on the Bot Framework
Connector's REST API (httpx), its inbound activities verified by their bearer JWT
(``auth``, PyJWT: the ``teams`` extra).

``channel.TEAMS`` is the channel's registration (``delivery/chat.py`` lists it); the
provider (``provider.TeamsProvider``) and its route (``routes``) are imported only when
``[teams]`` is configured.
"""

from .channel import TEAMS

__all__ = ["TEAMS"]
