"""The service's HTTP side: the ASGI app (``app``), the request body's bound
(``body``), service errors as responses (``errors``), the HTML pages, ``/openapi.json``,
``/healthz`` and ``/readyz``, the request middleware and ``/metrics`` (``observe``), the
extensions the app mounts and the steps run before it serves (``startup``). The API's
routes are ``server/routes``."""
