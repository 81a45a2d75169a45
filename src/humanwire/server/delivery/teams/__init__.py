"""The teams channel: a Microsoft Teams bot an operator registers, on the Bot Framework
Connector's REST API (httpx), its inbound activities verified by their bearer JWT
(``auth``, PyJWT: the ``teams`` extra)."""
