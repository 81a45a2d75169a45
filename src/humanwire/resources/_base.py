"""What every resource shares: the sync/async mode, the ``endpoint`` descriptor, and
the helpers that turn arguments into a validated request description.

Each endpoint is written once, as a method returning a flow (see ``humanwire._http``).
``@endpoint`` makes it a plain call on a ``Resource[SyncMode]`` and an awaitable one on a
``Resource[AsyncMode]``; its ``__get__`` overloads tell type checkers which is which.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload
from urllib.parse import quote

from pydantic import TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel
from typing_extensions import Self

from humanwire._http import (
    AsyncDriver,
    ClientOptions,
    Flow,
    RequestSpec,
    SyncDriver,
    parse_as,
    parse_nothing,
    request_flow,
)
from humanwire.errors import error_from_validation, invalid_request
from humanwire.types import RequestModel

__all__ = ["AsyncMode", "ModeT", "Resource", "SyncMode", "endpoint"]

P = ParamSpec("P")
T = TypeVar("T")
M = TypeVar("M", bound=RequestModel)


class SyncMode:
    """Marker: a resource whose methods block and return their result."""


class AsyncMode:
    """Marker: a resource whose methods return awaitables."""


ModeT = TypeVar("ModeT", SyncMode, AsyncMode)


class _Core(Protocol):
    """The part of a client a resource uses; read at call time, so copies stay separate."""

    @property
    def _options(self) -> ClientOptions: ...

    @property
    def _driver(self) -> SyncDriver | AsyncDriver: ...


class Resource(Generic[ModeT]):
    def __init__(self, client: _Core) -> None:
        self._client = client

    # -- building requests ---------------------------------------------------------------
    def _request(self, spec: RequestSpec[T]) -> Flow[T]:
        return request_flow(self._client._options, spec)

    def _post(
        self,
        path: str,
        body: RequestModel,
        response_type: type[T] | None,
        *,
        idempotency_key: str | None,
        wait: float | None = None,
        never_retry_pending: bool = False,
    ) -> Flow[T]:
        parse = parse_as(response_type) if response_type is not None else parse_nothing
        return self._request(
            RequestSpec(
                "POST",
                path,
                parse,  # type: ignore[arg-type]
                body=body,
                wait=wait,
                idempotency_key=idempotency_key,
                never_retry_pending=never_retry_pending,
            )
        )

    def _get(
        self,
        path: str,
        response_type: Any,
        *,
        params: Mapping[str, str | int | float | None] | None = None,
        wait: float | None = None,
    ) -> Flow[Any]:
        return self._request(
            RequestSpec("GET", path, parse_as(response_type), params=params, wait=wait)
        )

    def _patch(self, path: str, body: RequestModel, response_type: type[T]) -> Flow[T]:
        # A PATCH sets fields to what it gives: sent again, it changes nothing more.
        return self._request(RequestSpec("PATCH", path, parse_as(response_type), body=body))

    def _delete(self, path: str) -> Flow[None]:
        return self._request(RequestSpec("DELETE", path, parse_nothing))


def _wire_name(name: str) -> str:
    return "from" if name == "from_" else to_camel(name)


def build(model: type[M] | TypeAdapter[M], **arguments: Any) -> M:
    """Validate keyword arguments (snake_case) into a request model. ``None`` means "not
    given", so the model's defaults apply. Raises the typed error the service would."""
    # Wire names, so an error's ``field`` reads exactly as the service would report it.
    data = {_wire_name(name): value for name, value in arguments.items() if value is not None}
    try:
        if isinstance(model, TypeAdapter):
            return model.validate_python(data)
        return model.model_validate(data)
    except ValidationError as exc:
        raise error_from_validation(exc) from None


def path_id(value: object, wire_name: str) -> str:
    """An identifier placed in a path: non-empty, and escaped so it stays one segment."""
    if not isinstance(value, str) or not value.strip():
        raise invalid_request(f"{wire_name} must be a non-empty string", field=wire_name)
    return quote(value, safe="")


class endpoint(Generic[P, T]):
    """Turns a method returning ``Flow[T]`` into a sync or async call, by resource mode."""

    def __init__(self, fn: Callable[Concatenate[Any, P], Flow[T]]) -> None:
        self._fn = fn
        self._name = fn.__name__
        signature = inspect.signature(fn)
        # Shown by help() and inspect: the call as a user makes it, without ``self``.
        returns = signature.return_annotation
        if isinstance(returns, str) and returns.startswith("Flow[") and returns.endswith("]"):
            returns = returns[len("Flow[") : -1]  # the caller gets the flow's result
        self._signature = signature.replace(
            parameters=list(signature.parameters.values())[1:], return_annotation=returns
        )
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, obj: Resource[SyncMode], owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(self, obj: Resource[AsyncMode], owner: type[Any]) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: Resource[Any] | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        fn = self._fn
        call: Callable[..., Any]
        if isinstance(obj._client._driver, AsyncDriver):

            async def call_async(*args: Any, **kwargs: Any) -> Any:
                # The driver is looked up per call: with_options copies have their own.
                driver = obj._client._driver
                assert isinstance(driver, AsyncDriver)
                return await driver.run(fn(obj, *args, **kwargs))

            call = call_async
        else:

            def call_sync(*args: Any, **kwargs: Any) -> Any:
                driver = obj._client._driver
                assert isinstance(driver, SyncDriver)
                return driver.run(fn(obj, *args, **kwargs))

            call = call_sync
        functools.update_wrapper(call, fn)
        call.__signature__ = self._signature  # type: ignore[union-attr]
        # Non-data descriptor: cache the bound call on the instance.
        obj.__dict__[self._name] = call
        return call
