"""Helpers of the browser tests (imported by the test modules)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from humanwire import HumanWire
from humanwire.types import FormReceivedPayload

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


class OutsideRequests(list[str]):
    """URLs the page tried to fetch from anywhere but loopback (all refused)."""


def send_form(client: HumanWire, fields: list[dict[str, Any]], **options: Any) -> Any:
    """Sends a form by sms to the inbox's default human; returns the response."""
    options.setdefault("to", "+12025550100")
    options.setdefault("title", "A few questions")
    if "wait_time" not in options:
        options.setdefault("follow_up_time", 120)
    return client.forms.sms(fields=fields, **options)


def latest_form_url(client: HumanWire) -> str:
    for delivery in client.sandbox.deliveries():
        if delivery.form_url:
            return delivery.form_url
    raise AssertionError("no form was delivered")


def held(pool: ThreadPoolExecutor, function: Any, *args: Any, **kwargs: Any) -> Future[Any]:
    return pool.submit(function, *args, **kwargs)


def submitted_values(client: HumanWire, interaction_id: str) -> dict[str, str]:
    """The values of a submitted form, from its interaction status."""
    status = client.interactions.status(interaction_id)
    assert status.result is not None, f"{interaction_id} has no result ({status.status})"
    payload = status.result.payload
    assert isinstance(payload, FormReceivedPayload), payload
    return dict(payload.values)
