"""What Discord sends an app when people act: interactions, signed as Discord signs them
(Ed25519 over ``X-Signature-Timestamp`` + the raw body, the key's public half given to the
app), POSTed to the app's interactions endpoint, the answer timed (3 s) and held to the
interaction callback's schema, then applied (a message edited, a modal opened).

Each action is written once as a pure step (``_Delivery``: the payload, the signed
headers) and driven blocking (``click``) or async (``aclick``): the code under test may
run in the caller's event loop.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from .spec import DiscordSpec
from .state import DiscordError, DiscordState, FakeDiscordMessage, FakeInteraction

if TYPE_CHECKING:
    from .state import FakeUser

__all__ = ["FakeModal", "InteractionSender"]

PING = 1
APPLICATION_COMMAND = 2
MESSAGE_COMPONENT = 3
MODAL_SUBMIT = 5

_TIMEOUT = 10.0


@dataclass(frozen=True)
class FakeModal:
    """A modal the app opened (an answer of type 9) for ``user``, over ``message``."""

    interaction: FakeInteraction
    custom_id: str
    title: str
    inputs: tuple[dict[str, Any], ...]
    """The text inputs (type 4): ``custom_id``, ``label``, ``style``, ``required``…"""
    message: FakeDiscordMessage | None


@dataclass(frozen=True)
class _Delivery:
    interaction: FakeInteraction | None
    body: bytes
    headers: dict[str, str]


class InteractionSender:
    """Sends ``state``'s interactions to ``interactions_url`` (the app's endpoint)."""

    def __init__(self, state: DiscordState, spec: DiscordSpec) -> None:
        self.state = state
        self.spec = spec
        self.interactions_url: str | None = None
        self.modals: list[FakeModal] = []

    # -- what people do ----------------------------------------------------------------
    def click(self, message: FakeDiscordMessage, custom_id: str, user: FakeUser) -> httpx.Response:
        """``user`` presses the button ``custom_id`` of ``message``."""
        return self._send_blocking(self._click(message, custom_id, user))

    async def aclick(
        self, message: FakeDiscordMessage, custom_id: str, user: FakeUser
    ) -> httpx.Response:
        return await self._send_async(self._click(message, custom_id, user))

    def submit(self, modal: FakeModal, values: dict[str, str], user: FakeUser) -> httpx.Response:
        """``user`` fills ``modal``'s inputs (by ``custom_id``) and submits it."""
        return self._send_blocking(self._submit(modal, values, user))

    async def asubmit(
        self, modal: FakeModal, values: dict[str, str], user: FakeUser
    ) -> httpx.Response:
        return await self._send_async(self._submit(modal, values, user))

    def ping(self) -> httpx.Response:
        """What Discord sends when the endpoint URL is saved: the app answers ``{"type": 1}``."""
        return self._send_blocking(self._delivery(PING, None, {}))

    def post_signed(
        self,
        body: bytes,
        *,
        signature: str | None = None,
        timestamp: str | None = None,
    ) -> httpx.Response:
        """Any body, signed (or with the given ``signature`` / ``timestamp``: a forgery,
        a replay): for the app's refusals."""
        ts = timestamp if timestamp is not None else str(int(time.time()))
        headers = {"Content-Type": "application/json", "X-Signature-Timestamp": ts}
        headers["X-Signature-Ed25519"] = (
            signature if signature is not None else self._signature(ts, body)
        )
        with httpx.Client(timeout=_TIMEOUT) as client:
            return client.post(self._url(), content=body, headers=headers)

    # -- the steps ---------------------------------------------------------------------
    def _click(self, message: FakeDiscordMessage, custom_id: str, user: FakeUser) -> _Delivery:
        if custom_id not in message.custom_ids():
            raise ValueError(f"message {message.id} has no component {custom_id!r}")
        data = {"custom_id": custom_id, "component_type": 2}
        return self._delivery(MESSAGE_COMPONENT, user, data, message=message)

    def _submit(self, modal: FakeModal, values: dict[str, str], user: FakeUser) -> _Delivery:
        unknown = set(values) - {str(item["custom_id"]) for item in modal.inputs}
        if unknown:
            raise ValueError(f"the modal has no inputs {sorted(unknown)}")
        rows = [
            {"type": 1, "components": [{"type": 4, "custom_id": key, "value": value}]}
            for key, value in values.items()
        ]
        data = {"custom_id": modal.custom_id, "components": rows}
        return self._delivery(MODAL_SUBMIT, user, data, message=modal.message)

    def _delivery(
        self,
        type_: int,
        user: FakeUser | None,
        data: dict[str, Any],
        *,
        message: FakeDiscordMessage | None = None,
    ) -> _Delivery:
        state = self.state
        payload: dict[str, Any] = {
            "id": state.new_id(),
            "application_id": state.application_id,
            "type": type_,
            "token": secrets.token_urlsafe(48),
            "version": 1,
        }
        if type_ != PING:
            payload["data"] = data
        interaction: FakeInteraction | None = None
        if user is not None:
            channel = state.channel(message.channel_id) if message is not None else None
            if channel is not None:
                payload["channel_id"] = channel.id
                payload["channel"] = {"id": channel.id, "type": channel.type}
            if channel is not None and channel.guild_id is not None:
                payload["guild_id"] = channel.guild_id
                payload["member"] = {"user": user.to_json(), "roles": [], "permissions": "0"}
            else:
                payload["user"] = user.to_json()
            if message is not None:
                payload["message"] = {
                    "id": message.id,
                    "channel_id": message.channel_id,
                    "content": message.content,
                    "components": message.components,
                }
            interaction = state.new_interaction(type_, user.id, payload)
        body = json.dumps(payload).encode()
        ts = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Discord-Interactions/1.0 (+https://discord.com)",
            "X-Signature-Ed25519": self._signature(ts, body),
            "X-Signature-Timestamp": ts,
        }
        return _Delivery(interaction, body, headers)

    def _signature(self, timestamp: str, body: bytes) -> str:
        return self.state.signing_key.sign(timestamp.encode() + body).hex()

    def _url(self) -> str:
        if not self.interactions_url:
            raise RuntimeError("set fake.interactions_url to the app's interactions endpoint")
        return self.interactions_url

    def _send_blocking(self, delivery: _Delivery) -> httpx.Response:
        with httpx.Client(timeout=_TIMEOUT) as client:
            response = client.post(self._url(), content=delivery.body, headers=delivery.headers)
        self._apply(delivery, response)
        return response

    async def _send_async(self, delivery: _Delivery) -> httpx.Response:
        async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
            response = await client.post(
                self._url(), content=delivery.body, headers=delivery.headers
            )
        self._apply(delivery, response)
        return response

    # -- the answer --------------------------------------------------------------------
    def _apply(self, delivery: _Delivery, response: httpx.Response) -> None:
        """Holds the app's answer to what Discord takes, and applies it."""
        interaction = delivery.interaction
        state = self.state
        if response.status_code >= 300:
            if interaction is not None:
                with state.lock:
                    state.errors.append(
                        f"interaction {interaction.id}: the app answered {response.status_code}"
                    )
            return
        try:
            answer = response.json()
        except ValueError:
            answer = None
        problem = self.spec.check_callback(answer)
        if problem is not None:
            with state.lock:
                state.errors.append(f"an interaction's answer Discord refuses: {problem}")
            return
        if interaction is None:
            return
        try:
            state.answer(interaction, response.status_code, answer)
        except DiscordError as refused:
            with state.lock:
                state.errors.append(f"interaction {interaction.id}: {refused.message}")
            return
        if isinstance(answer, dict) and answer.get("type") == 9:
            data = answer.get("data") or {}
            inputs = tuple(
                child
                for row in data.get("components", ())
                for child in row.get("components", ())
                if child.get("type") == 4
            )
            source = interaction.payload.get("message") or {}
            message = next((m for m in state.messages if m.id == str(source.get("id"))), None)
            with state.lock:
                self.modals.append(
                    FakeModal(
                        interaction,
                        str(data.get("custom_id", "")),
                        str(data.get("title", "")),
                        inputs,
                        message,
                    )
                )
