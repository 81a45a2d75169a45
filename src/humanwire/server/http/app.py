"""The service's ASGI application: the API of docs/design.md, the sandbox API, and the pages.

``create_app`` builds it around one ``Engine``; the app owns the engine's life: it is
started in the serving event loop at startup and closed at shutdown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from ..config import ServiceConfig
from ..delivery.real import real_providers
from ..engine import Engine
from ..routes import api_operations, to_routes
from .errors import exception_handlers
from .extensions import load_extensions
from .health import ReadinessProbe
from .middleware import (
    BodyLimitMiddleware,
    ObserveMiddleware,
    metrics_endpoint,
)
from .openapi import build_openapi
from .pages import page_routes
from .startup import StartupStep

__all__ = ["create_app"]


def create_app(
    config: ServiceConfig | None = None,
    engine: Engine | None = None,
    *,
    before_serving: Sequence[StartupStep] = (),
) -> Starlette:
    """The app; ``before_serving``: steps its startup runs last, once everything started
    (``humanwire.server.http.startup``), their writes committed before it serves."""
    if config is None:
        given = getattr(engine, "config", None)
        config = given if isinstance(given, ServiceConfig) else ServiceConfig()
    service_engine = engine if engine is not None else Engine(config)
    operations = api_operations(sandbox_enabled=config.sandbox_enabled)
    routes: list[BaseRoute] = list(to_routes(operations))
    routes.append(Route("/metrics", metrics_endpoint, methods=["GET"]))
    routes += page_routes(service_engine, config)
    # Providers get the inbound port, not the engine; the app registers what they carry.
    wiring = real_providers(config, service_engine.provider_port())
    service_engine.use_providers(wiring)
    providers = wiring.attached
    for provider in providers:
        routes += provider.routes()
    extensions = load_extensions(config, service_engine)
    routes += [extension.route for extension in extensions]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await service_engine.start()
        for provider in providers:
            await provider.start()
        try:
            async with AsyncExitStack() as stack:
                for extension in extensions:
                    await stack.enter_async_context(extension.running())
                for step in before_serving:
                    await step(service_engine)
                service_engine.runtime.store.commit()
                yield
        finally:
            await service_engine.close()
            for provider in providers:
                await provider.aclose()

    app = _Service(
        routes=routes,
        middleware=[Middleware(BodyLimitMiddleware, max_body_bytes=config.max_body_bytes)],
        exception_handlers=exception_handlers(),
        lifespan=lifespan,
    )
    # An API answers /webhooks/ with a 404 body, not a redirect a POST would not follow.
    app.router.redirect_slashes = False
    app.state.engine = service_engine
    app.state.config = config
    app.state.openapi = build_openapi(operations, config.public_url)
    app.state.readiness = ReadinessProbe(service_engine, providers)
    return app


class _Service(Starlette):
    def build_middleware_stack(self) -> ASGIApp:
        # Outside Starlette's own error layer, so a 500 carries the request id too.
        engine: Engine = self.state.engine
        return ObserveMiddleware(
            super().build_middleware_stack(),
            engine.metrics,
            engine.runtime.store,
            engine.runtime.config.unavailable_retry_after,
        )
