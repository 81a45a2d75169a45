"""Telnyx: SMS and voice calls for real (``humanwire[telnyx]``), the second carrier.

``messaging`` (Messaging API, inbound texts, delivery reports), ``voice`` (TeXML calls run
by the shared voice agent, ``delivery.call_turns``), ``numbers`` (the pool, buying),
``rest`` (the REST calls, over httpx), ``routes`` (what Telnyx calls, Ed25519-verified),
``provider`` (the channels put together).
"""

from .provider import TelnyxProvider
from .routes import ROUTE_PREFIX, telnyx_routes

__all__ = ["ROUTE_PREFIX", "TelnyxProvider", "telnyx_routes"]
