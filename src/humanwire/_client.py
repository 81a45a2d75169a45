"""``HumanWire`` and ``AsyncHumanWire``: configuration, the HTTP client, the resources.

Configuration comes from arguments, else the environment:

- ``base_url`` / ``HUMANWIRE_BASE_URL``: the service. When neither is set, the client
  starts (or joins) the embedded service in-process on loopback and uses *its* API key;
  ``api_key`` and ``HUMANWIRE_API_KEY`` are then ignored, since the embedded service
  has its own account.
- ``api_key`` / ``HUMANWIRE_API_KEY``: required whenever a base URL is set.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Generic

import httpx
from typing_extensions import Self

from . import _constants as C
from ._http import AsyncDriver, ClientOptions, SyncDriver, default_timeout
from .errors import HumanWireError
from .resources import (
    Approvals,
    AsyncMode,
    Audit,
    Calls,
    Channels,
    Forms,
    Interactions,
    Messages,
    ModeT,
    Numbers,
    People,
    Phone,
    Sandbox,
    SyncMode,
    Telegram,
    Webhooks,
)

__all__ = ["AsyncHumanWire", "HumanWire", "TimeoutTypes"]

TimeoutTypes = float | httpx.Timeout | None
"""A number of seconds for every phase, an ``httpx.Timeout``, or None for no limit. The
read timeout of a request that asks the service to wait is raised to cover that wait."""


class _NotGiven:
    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()


def _timeout(value: TimeoutTypes) -> httpx.Timeout:
    if isinstance(value, _NotGiven):
        return default_timeout()
    if isinstance(value, httpx.Timeout):
        return value
    return httpx.Timeout(value)


def _resolve(api_key: str | None, base_url: str | None) -> tuple[str, str]:
    """(base_url, api_key) from the arguments, the environment, or the embedded service."""
    base_url = base_url or os.environ.get(C.BASE_URL_ENV) or None
    if base_url is None:
        # Imported only now: `import humanwire` must not pull in the server stack.
        from .embedded_service import embedded_service

        service = embedded_service()
        return str(service.base_url), str(service.api_key)
    api_key = api_key or os.environ.get(C.API_KEY_ENV) or None
    if api_key is None:
        raise HumanWireError(
            f"no API key: pass api_key= or set {C.API_KEY_ENV} "
            f"(or set neither base_url nor {C.BASE_URL_ENV} to use the embedded service)"
        )
    return base_url.rstrip("/"), api_key


def _user_agent() -> str:
    from . import __version__

    return f"humanwire-python/{__version__}"


class _BaseClient(Generic[ModeT]):
    """Configuration and resources shared by both clients."""

    messages: Messages[ModeT]
    forms: Forms[ModeT]
    calls: Calls[ModeT]
    interactions: Interactions[ModeT]
    numbers: Numbers[ModeT]
    webhooks: Webhooks[ModeT]
    channels: Channels[ModeT]
    phone: Phone[ModeT]
    sandbox: Sandbox[ModeT]
    """The human's side (embedded service): see deliveries, reply, end calls."""
    approvals: Approvals[ModeT]
    """Approval requests: ask people to approve an action, wait, consume it once."""
    audit: Audit[ModeT]
    """The account's audit log of approvals."""
    people: People[ModeT]
    """The people directory: ask a person (``person=``) instead of an address."""
    telegram: Telegram[ModeT]
    """The account's own Telegram bot (``telegram.bots``)."""

    _options: ClientOptions
    _driver: SyncDriver | AsyncDriver

    def _init_options(
        self,
        api_key: str | None,
        base_url: str | None,
        timeout: TimeoutTypes,
        max_retries: int,
        retry_initial_delay: float,
        retry_max_delay: float,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        resolved_url, resolved_key = _resolve(api_key, base_url)
        self._options = ClientOptions(
            base_url=resolved_url,
            api_key=resolved_key,
            timeout=_timeout(timeout),
            max_retries=max_retries,
            retry_initial_delay=retry_initial_delay,
            retry_max_delay=retry_max_delay,
            user_agent=_user_agent(),
        )

    def _attach(self) -> None:
        self.messages = Messages(self)
        self.forms = Forms(self)
        self.calls = Calls(self)
        self.interactions = Interactions(self)
        self.numbers = Numbers(self)
        self.webhooks = Webhooks(self)
        self.channels = Channels(self)
        self.phone = Phone(self)
        self.sandbox = Sandbox(self)
        self.approvals = Approvals(self)
        self.audit = Audit(self)
        self.people = People(self)
        self.telegram = Telegram(self)

    def _copied_options(self, timeout: TimeoutTypes, max_retries: int | None) -> ClientOptions:
        changes: dict[str, Any] = {}
        if not isinstance(timeout, _NotGiven):
            changes["timeout"] = _timeout(timeout)
        if max_retries is not None:
            if max_retries < 0:
                raise ValueError("max_retries must be 0 or more")
            changes["max_retries"] = max_retries
        return self._options.copy(**changes)

    @property
    def base_url(self) -> str:
        return self._options.base_url

    @property
    def api_key(self) -> str:
        return self._options.api_key

    @property
    def timeout(self) -> httpx.Timeout:
        return self._options.timeout

    @property
    def max_retries(self) -> int:
        return self._options.max_retries

    def __repr__(self) -> str:
        # Never print the key.
        return f"{type(self).__name__}(base_url={self.base_url!r})"


class HumanWire(_BaseClient[SyncMode]):
    """The blocking client.

    ``with HumanWire() as client: client.messages.sms(to=..., message=..., wait_time=60)``

    ``api_key`` / ``HUMANWIRE_API_KEY`` and ``base_url`` / ``HUMANWIRE_BASE_URL`` pick the
    service. With no base URL at all, the embedded service is started (or joined) and its
    own key is used; a key from the environment is then ignored. Every send carries an
    ``Idempotency-Key`` (a fresh one unless ``idempotency_key`` is given), reused across
    retries, so a retry never texts a human twice.
    """

    _driver: SyncDriver

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: TimeoutTypes = NOT_GIVEN,
        max_retries: int = C.DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
        retry_initial_delay: float = C.RETRY_INITIAL_DELAY,
        retry_max_delay: float = C.RETRY_MAX_DELAY,
        sleep: Callable[[float], None] | None = None,
        multiplex_waits: bool = True,
    ) -> None:
        """``http_client``: your own ``httpx.Client`` (proxies, transports); it is not
        closed by ``close()``. ``sleep`` replaces ``time.sleep`` between retries.
        ``multiplex_waits``: past a handful of waits in flight, collect answers from the
        account's outcome stream instead of holding a connection per wait (False: hold)."""
        self._init_options(
            api_key, base_url, timeout, max_retries, retry_initial_delay, retry_max_delay
        )
        if http_client is not None and not isinstance(http_client, httpx.Client):
            raise TypeError("HumanWire needs an httpx.Client (AsyncHumanWire takes AsyncClient)")
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client()
        self._driver = SyncDriver(self._http, sleep)
        if not multiplex_waits:
            self._driver.multiplex_after = float("inf")
        self._owns_driver = True
        self._attach()

    def with_options(
        self, *, timeout: TimeoutTypes = NOT_GIVEN, max_retries: int | None = None
    ) -> HumanWire:
        """A copy with other defaults, sharing this client's connections."""
        copy = object.__new__(type(self))
        copy._options = self._copied_options(timeout, max_retries)
        copy._owns_http = False
        copy._http = self._http
        copy._driver = self._driver  # one connection pool, one outcome stream
        copy._owns_driver = False
        copy._attach()
        return copy

    def to_async(self) -> AsyncHumanWire:
        """An ``AsyncHumanWire`` on the same service and account, with the same defaults
        (its own connections). Adapters use it for their async path, so a sync client
        given to them is never paired with one built from the environment."""
        twin = AsyncHumanWire.__new__(AsyncHumanWire)
        twin._options = self._options.copy()
        twin._owns_http = True
        twin._http = httpx.AsyncClient()
        twin._driver = AsyncDriver(twin._http, None)
        twin._driver.multiplex_after = self._driver.multiplex_after
        twin._owns_driver = True
        twin._attach()
        return twin

    def close(self) -> None:
        if self._owns_driver:
            self._driver.close()  # its outcome stream, even on your own http_client
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncHumanWire(_BaseClient[AsyncMode]):
    """The asyncio client: the same methods as ``HumanWire``, awaited.

    ``async with AsyncHumanWire() as client: await client.messages.sms(...)``
    """

    _driver: AsyncDriver

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: TimeoutTypes = NOT_GIVEN,
        max_retries: int = C.DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
        retry_initial_delay: float = C.RETRY_INITIAL_DELAY,
        retry_max_delay: float = C.RETRY_MAX_DELAY,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        multiplex_waits: bool = True,
    ) -> None:
        """``http_client``: your own ``httpx.AsyncClient``; it is not closed by
        ``aclose()``. ``sleep`` replaces ``asyncio.sleep`` between retries.
        ``multiplex_waits``: as for ``HumanWire``."""
        self._init_options(
            api_key, base_url, timeout, max_retries, retry_initial_delay, retry_max_delay
        )
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise TypeError("AsyncHumanWire needs an httpx.AsyncClient (HumanWire takes Client)")
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient()
        self._driver = AsyncDriver(self._http, sleep)
        if not multiplex_waits:
            self._driver.multiplex_after = float("inf")
        self._owns_driver = True
        self._attach()

    def with_options(
        self, *, timeout: TimeoutTypes = NOT_GIVEN, max_retries: int | None = None
    ) -> AsyncHumanWire:
        """A copy with other defaults, sharing this client's connections."""
        copy = object.__new__(type(self))
        copy._options = self._copied_options(timeout, max_retries)
        copy._owns_http = False
        copy._http = self._http
        copy._driver = self._driver  # one connection pool, one outcome stream
        copy._owns_driver = False
        copy._attach()
        return copy

    def to_sync(self) -> HumanWire:
        """A ``HumanWire`` on the same service and account, with the same defaults (its
        own connections)."""
        twin = HumanWire.__new__(HumanWire)
        twin._options = self._options.copy()
        twin._owns_http = True
        twin._http = httpx.Client()
        twin._driver = SyncDriver(twin._http, None)
        twin._driver.multiplex_after = self._driver.multiplex_after
        twin._owns_driver = True
        twin._attach()
        return twin

    async def aclose(self) -> None:
        if self._owns_driver:
            await self._driver.aclose()
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def sync_client_for(client: HumanWire | None, async_client: AsyncHumanWire | None) -> HumanWire:
    """The sync client of an adapter: the one given, else one on the given async client's
    service and account (never one from the environment that might reach another
    service), else one from the environment."""
    if client is not None:
        return client
    return async_client.to_sync() if async_client is not None else HumanWire()


def async_client_for(
    client: HumanWire | None, async_client: AsyncHumanWire | None
) -> AsyncHumanWire:
    """The async twin of :func:`sync_client_for`."""
    if async_client is not None:
        return async_client
    return client.to_async() if client is not None else AsyncHumanWire()
