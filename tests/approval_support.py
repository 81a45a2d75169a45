"""People deciding approval requests in tests, as they would: on the approval page (``POST
/a/{token}``, a plain form post, the path every channel's link leads to). Shared by the
client's end-to-end tests and every adapter's.

- :func:`decide_on_page`: decide on a page whose address the test holds (``links`` /
  ``approvalUrl`` of a pending request, a paused run's ``form_url``).
- :func:`decide_next`: in the background, the next approval text delivered to the
  sandbox's human (its link) is opened and decided: for a request held in the call.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Literal, Protocol

import httpx

from humanwire import HumanWire
from humanwire.types import SandboxDelivery

Decision = Literal["approve", "reject"]


class _Deliveries(Protocol):
    """What was delivered to the sandbox's human: ``client.sandbox`` or a
    ``ScriptedHuman``."""

    def deliveries(
        self, *, to: str | None = None, interaction_id: str | None = None
    ) -> list[SandboxDelivery]: ...


_LINK = re.compile(r"https?://[^\s]+/a/[A-Za-z0-9_-]+")


def decide_on_page(url: str, decision: Decision, comment: str | None = None) -> None:
    data = {"decision": decision}
    if comment:
        data["comment"] = comment
    with httpx.Client(trust_env=False, timeout=10) as http:
        response = http.post(url, data=data, follow_redirects=True)
    assert response.status_code < 400, (response.status_code, response.text[:300])


def approval_link(text: str) -> str | None:
    """The approval page's address in a delivered text."""
    found = _LINK.search(text)
    return found.group(0) if found else None


class PageDecider:
    """Decides the next approval whose link reaches the sandbox (``to``: one recipient),
    from a thread; ``wait()`` re-raises what went wrong there."""

    def __init__(
        self,
        client: HumanWire | _Deliveries,
        decision: Decision,
        comment: str | None,
        *,
        to: str | None,
        delay: float,
        timeout: float,
    ) -> None:
        self.error: BaseException | None = None
        self.url: str | None = None
        source: _Deliveries = client.sandbox if isinstance(client, HumanWire) else client
        seen = {d.id for d in source.deliveries()}

        def run() -> None:
            try:
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    for delivery in source.deliveries(to=to):
                        link = approval_link(delivery.text)
                        if delivery.id not in seen and link:
                            time.sleep(delay)
                            self.url = link
                            decide_on_page(link, decision, comment)
                            return
                    time.sleep(0.1)
                raise AssertionError("no approval link was delivered in time")
            except BaseException as exc:  # handed to wait()
                self.error = exc

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def wait(self, timeout: float = 15.0) -> str:
        """The page's address, once decided."""
        self._thread.join(timeout)
        if self.error is not None:
            raise self.error
        assert self.url is not None, "the decision was not made"
        return self.url

    async def async_wait(self, timeout: float = 15.0) -> str:
        import asyncio

        return await asyncio.to_thread(self.wait, timeout)


def decide_next(
    client: HumanWire | _Deliveries,
    decision: Decision = "approve",
    comment: str | None = None,
    *,
    to: str | None = None,
    delay: float = 0.0,
    timeout: float = 15.0,
) -> PageDecider:
    return PageDecider(client, decision, comment, to=to, delay=delay, timeout=timeout)


def page_of(human: _Deliveries, interaction_id: str, timeout: float = 10.0) -> str:
    """The approval page's address, from the text an approval request delivered to the
    sandbox's human (``human``: a ``ScriptedHuman``)."""
    deadline = time.monotonic() + timeout
    while True:
        for delivery in human.deliveries(interaction_id=interaction_id):
            link = approval_link(delivery.text)
            if link:
                return link
        if time.monotonic() > deadline:
            raise AssertionError(f"no approval text was delivered for {interaction_id}")
        time.sleep(0.1)


def decide_interaction(
    human: _Deliveries, interaction_id: str, decision: Decision, comment: str | None = None
) -> None:
    """The sandbox's human decides the approval request ``interaction_id`` on its page."""
    decide_on_page(page_of(human, interaction_id), decision, comment)


def approval_texts(human: _Deliveries) -> list[SandboxDelivery]:
    """The approval requests' texts delivered to the sandbox's human so far."""
    return [d for d in human.deliveries() if approval_link(d.text)]
