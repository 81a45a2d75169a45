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
from typing import Literal

import httpx

from humanwire import HumanWire

Decision = Literal["approve", "reject"]
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
        client: HumanWire,
        decision: Decision,
        comment: str | None,
        *,
        to: str | None,
        delay: float,
        timeout: float,
    ) -> None:
        self.error: BaseException | None = None
        self.url: str | None = None
        seen = {d.id for d in client.sandbox.deliveries()}

        def run() -> None:
            try:
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    for delivery in client.sandbox.deliveries(to=to):
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
        self._thread.join(timeout)
        if self.error is not None:
            raise self.error
        assert self.url is not None, "the decision was not made"
        return self.url


def decide_next(
    client: HumanWire,
    decision: Decision = "approve",
    comment: str | None = None,
    *,
    to: str | None = None,
    delay: float = 0.0,
    timeout: float = 15.0,
) -> PageDecider:
    return PageDecider(client, decision, comment, to=to, delay=delay, timeout=timeout)
