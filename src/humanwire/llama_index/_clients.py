"""The sync and async clients of one adapter always talk to the same service and account."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = ["async_twin", "sync_twin"]


def async_twin(client: HumanWire | None) -> AsyncHumanWire:
    """An ``AsyncHumanWire`` for ``client``'s service and key (LlamaIndex agents call the
    async path even when only a sync client was given); from the environment without one."""
    from humanwire._client import AsyncHumanWire

    if client is None:
        return AsyncHumanWire()
    return AsyncHumanWire(
        api_key=client.api_key, base_url=client.base_url, max_retries=client.max_retries
    )


def sync_twin(client: AsyncHumanWire | None) -> HumanWire:
    """A ``HumanWire`` for ``client``'s service and key; from the environment without one."""
    from humanwire._client import HumanWire

    if client is None:
        return HumanWire()
    return HumanWire(
        api_key=client.api_key, base_url=client.base_url, max_retries=client.max_retries
    )
