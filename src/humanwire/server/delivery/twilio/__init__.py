"""Twilio: SMS, WhatsApp and voice calls for real (``humanwire[twilio]``).

``messaging`` (Messages API, inbound texts, status callbacks), ``voice`` (calls run by
the voice agent, TwiML turns), ``rest`` (the REST calls, over httpx), ``routes`` (what
Twilio calls, signature-verified), ``provider`` (the channels put together).
"""

from .provider import ROUTE_PREFIX, TwilioProvider
from .routes import twilio_routes

__all__ = ["ROUTE_PREFIX", "TwilioProvider", "twilio_routes"]
