"""The service's ASGI application: the API of docs/design.md, the sandbox API, and the pages.

``create_app`` builds it around one ``Engine``; the app owns the engine's life: it is
started in the serving event loop at startup and closed at shutdown.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config import ServiceConfig
from ..delivery.real import real_providers
from ..engine import Engine
from ..routes import api_operations, to_routes
from ..store.commits import TOUCHED, StoreUnavailable, Touched
from .body import BodyLimitMiddleware
from .errors import exception_handlers, store_unavailable_response
from .extensions import load_extensions
from .health import ReadinessProbe
from .observe import ObserveMiddleware, metrics_endpoint
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
        stack = _CommitBeforeAnswering(super().build_middleware_stack(), engine)
        return ObserveMiddleware(stack, engine.metrics)


class _CommitBeforeAnswering:
    """Commits the store's open writes as a response starts: the SQLite store groups a
    loop turn's writes into one transaction committed on the next turn, and the response
    would otherwise reach the client first (uvicorn writes it at once), uncommitted —
    invisible to another process, lost if this one died then.

    A response whose request read or wrote in a batch that was rolled back (the disk
    full) is not sent: a 503 with ``Retry-After`` goes out in its place, so nothing the
    database lost is answered as done."""

    def __init__(self, app: ASGIApp, engine: Engine) -> None:
        self.app = app
        self.engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        touched = Touched()
        token = TOUCHED.set(touched)  # this request's context, and the tasks it starts
        replaced = False

        async def send_committed(message: Message) -> None:
            nonlocal replaced
            if replaced:
                return  # the handler's body, after its start was replaced
            if message["type"] == "http.response.start":
                with contextlib.suppress(StoreUnavailable):
                    self.engine.runtime.store.commit()  # a failure lands in ``touched`` if ours
                if touched.failure() is not None:
                    replaced = True
                    retry_after = self.engine.config.unavailable_retry_after
                    await store_unavailable_response(retry_after)(scope, receive, send)
                    return
            await send(message)

        try:
            await self.app(scope, receive, send_committed)
        finally:
            TOUCHED.reset(token)
