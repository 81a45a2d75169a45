"""The service's HTTP side: the ASGI app (``app``), what every request passes through
(its connection's guards, its id, logs and metrics, its body's bound: ``middleware``,
with ``/metrics``), service errors as responses (``errors``), the HTML pages,
``/openapi.json``, ``/healthz`` and ``/readyz``, the
extensions the app mounts and the steps run before it serves (``startup``). The API's
routes are ``server/routes``."""
