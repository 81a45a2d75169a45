"""Browser tests: Playwright (sync API) driving Debian's chromium against the service on
loopback (the testing kit's ``humanwire_service``). No browser is ever downloaded; every
request leaving 127.0.0.1 is refused and recorded, so a test can assert the pages fetch
nothing from the outside."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest
from browser_helpers import DESKTOP, PHONE, OutsideRequests
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Route, sync_playwright

CHROMIUM = os.environ.get("HUMANWIRE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


# Module scope, not session: sync Playwright keeps an asyncio loop running in the main
# thread while it is open, and every pytest-asyncio test after it would then fail with
# "Runner.run() cannot be called from a running event loop".
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"chromium not found at {CHROMIUM} (apt-get install chromium)")
    launched = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    try:
        yield launched
    finally:
        launched.close()


@pytest.fixture
def outside_requests() -> OutsideRequests:
    return OutsideRequests()


def _new_context(
    browser: Browser, outside: OutsideRequests, viewport: dict[str, int]
) -> BrowserContext:
    context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]

    def guard(route: Route) -> None:
        host = urlsplit(route.request.url).hostname
        if host in ("127.0.0.1", "localhost") or route.request.url.startswith("data:"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    context.set_default_timeout(10_000)
    return context


@pytest.fixture
def context(browser: Browser, outside_requests: OutsideRequests) -> Iterator[BrowserContext]:
    """A phone-sized browser: the recipient opens the link on a phone."""
    created = _new_context(browser, outside_requests, PHONE)
    try:
        yield created
    finally:
        created.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


@pytest.fixture
def desktop_page(browser: Browser, outside_requests: OutsideRequests) -> Iterator[Page]:
    created = _new_context(browser, outside_requests, DESKTOP)
    try:
        yield created.new_page()
    finally:
        created.close()


@pytest.fixture
def background() -> Iterator[ThreadPoolExecutor]:
    """For requests the service holds open (``waitTime``) while the browser acts."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        yield pool
