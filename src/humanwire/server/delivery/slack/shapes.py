"""What Slack's verified requests must look like before anything acts on them.

Only the fields the provider reads are checked, and only for the events and payloads it
acts on (a message, an uninstall, a click on Approve / Reject): any other event or
interaction Slack sends is acknowledged as it comes. A field of the wrong type is
``Malformed`` (400 naming it), so the background work an event starts never meets a
shape it cannot handle.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from humanwire.types import field_path

from ..provider_routes import Malformed, form_params, json_value

__all__ = ["ACTED_SUBTYPES", "event_envelope", "interaction_payload"]

ACTED_SUBTYPES = (None, "thread_broadcast", "file_share")
"""The message subtypes a person's message has (edits, deletions, joins and bot messages
are ignored)."""


class _Shape(BaseModel):
    # Slack adds fields over time: only the ones read here are checked.
    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)


class _Envelope(_Shape):
    type: str
    challenge: str | None = None
    event_id: str | None = None
    team_id: str | None = None
    event: dict[str, Any] | None = None


class _Event(_Shape):
    type: str
    subtype: str | None = None


class _Message(_Shape):
    team: str | None = None
    user: str | None = None
    bot_id: str | None = None
    channel: str | None = None
    channel_type: str | None = None
    text: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    parent_user_id: str | None = None


class _Tokens(_Shape):
    oauth: list[str] | None = None
    bot: list[str] | None = None


class _Uninstall(_Shape):
    team: str | None = None
    tokens: _Tokens | None = None


class _Interaction(_Shape):
    type: str


class _Id(_Shape):
    id: str


class _Action(_Shape):
    action_id: str


class _Container(_Shape):
    channel_id: str | None = None
    message_ts: str | None = None


class _Posted(_Shape):
    ts: str | None = None


class _BlockActions(_Shape):
    type: Literal["block_actions"]
    actions: list[_Action]
    user: _Id
    team: _Id | None = None
    """Null for an organization-wide install."""
    container: _Container | None = None
    channel: _Id | None = None
    message: _Posted | None = None


def _check(model: type[_Shape], value: Any, at: tuple[str, ...] = ()) -> None:
    try:
        model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = field_path((*at, *first["loc"]))
        raise Malformed(
            f"{field}: {first['msg']}" if field else first["msg"], field=field
        ) from None


def event_envelope(body: bytes) -> dict[str, Any]:
    """The Events API body (``url_verification`` or ``event_callback``, or another type
    to acknowledge), checked."""
    envelope = json_value(body)
    if not isinstance(envelope, dict):
        raise Malformed("the body is not a JSON object")
    _check(_Envelope, envelope)
    kind = envelope["type"]
    if kind == "url_verification" and envelope.get("challenge") is None:
        raise Malformed("challenge is required", field="challenge")
    if kind != "event_callback":
        return envelope
    event = envelope.get("event")
    if event is None:
        raise Malformed("event is required", field="event")
    _check(_Event, event, ("event",))
    if event["type"] == "message" and event.get("subtype") in ACTED_SUBTYPES:
        _check(_Message, event, ("event",))
    elif event["type"] in ("app_uninstalled", "tokens_revoked"):
        _check(_Uninstall, event, ("event",))
    return envelope


def interaction_payload(body: bytes) -> dict[str, Any]:
    """An interaction (the form field ``payload``, JSON), checked when it is a click."""
    form = form_params(body)
    if "payload" not in form:
        raise Malformed("payload is required", field="payload")
    try:
        payload = json_value(form["payload"])
    except Malformed as exc:
        raise Malformed(f"payload: {exc.message}", field="payload") from None
    if not isinstance(payload, dict):
        raise Malformed("payload is not a JSON object", field="payload")
    _check(_Interaction, payload, ("payload",))
    if payload["type"] == "block_actions":
        _check(_BlockActions, payload, ("payload",))
    return payload
