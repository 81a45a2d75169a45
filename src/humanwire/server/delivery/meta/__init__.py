"""WhatsApp through Meta's Cloud API: a second provider of the ``whatsapp`` channel
(``[whatsapp] provider = "meta"``; docs/going-live/whatsapp-meta.md).

``rest`` (the Graph API's send, over httpx on the carriers' REST path), ``provider``
(sends, the 24-hour window, reply buttons, what the webhook brings), ``routes`` (the
webhook, ``X-Hub-Signature-256`` checked, and the subscription handshake). Imported only
when configured.
"""

from .provider import ROUTE_PREFIX, MetaWhatsAppProvider

__all__ = ["ROUTE_PREFIX", "MetaWhatsAppProvider"]
