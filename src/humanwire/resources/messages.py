"""Text messages: ``/messages/sms``, ``/messages/whatsapp``, ``/messages/slack``,
``/messages/telegram``, ``/messages/discord``, ``/messages/teams``, ``/messages/email``,
``/messages/person`` and ``/messages/{channel_id}`` (a channel card). Each channel's
method takes ``to`` or, in its place, ``person`` (a person's id); with ``person``,
``fallback_after`` seconds later, nobody having answered, the message goes to the
person's next confirmed address on that channel too (docs/people.md)."""

from __future__ import annotations

from collections.abc import Mapping

from humanwire._constants import CHANNEL_MESSAGE_READ_TIMEOUT, WAIT_MARGIN
from humanwire._http import Flow
from humanwire.errors import invalid_request
from humanwire.types import (
    ChannelMessageRequest,
    DiscordMessageRequest,
    EmailMessageRequest,
    MessageResponse,
    PersonMessageRequest,
    SlackMessageRequest,
    SMSMessageRequest,
    TeamsMessageRequest,
    TelegramMessageRequest,
    WhatsAppMessageRequest,
)

from ._base import ModeT, Resource, build, endpoint, path_id

__all__ = ["Messages"]


class Messages(Resource[ModeT]):
    """Send a text and, with ``wait_time``, wait for the human's reply.

    A human who does not reply within ``wait_time`` is not an error: ``response`` carries
    the no-response text and ``responded`` is false.
    """

    @endpoint
    def sms(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        message: str,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        from_: str | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/sms``: ``to`` in E.164; ``from_`` defaults to the account's
        reserved number, else a shared one."""
        body = build(
            SMSMessageRequest,
            to=to,
            person=person,
            message=message,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            from_=from_,
            metadata=metadata,
        )
        return self._post(
            "/messages/sms",
            body,
            MessageResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def whatsapp(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        message: str,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/whatsapp`` from the shared account (the service wraps the text)."""
        body = build(
            WhatsAppMessageRequest,
            to=to,
            person=person,
            message=message,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/messages/whatsapp",
            body,
            MessageResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def slack(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        message: str,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        from_: str | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/slack``: ``to`` is a member or channel id; ``from_`` the
        account's own workspace id. The human must reply in the message's thread."""
        body = build(
            SlackMessageRequest,
            to=to,
            person=person,
            message=message,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            from_=from_,
            metadata=metadata,
        )
        return self._post(
            "/messages/slack",
            body,
            MessageResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def telegram(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        message: str,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/telegram`` from the shared bot: ``to`` is a chat id (the
        person started the chat with the bot: a bot cannot write first). A reply to the
        message, or the next message in the chat, is the answer."""
        body = build(
            TelegramMessageRequest,
            to=to,
            person=person,
            message=message,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/messages/telegram",
            body,
            MessageResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def discord(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        message: str,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/discord`` from the operator's app: ``to`` is a Discord user id
        (a DM: the person shares a server with the app) or a channel id (a post there).
        The message carries a Reply button; the text typed in the form it opens is the
        answer."""
        body = build(
            DiscordMessageRequest,
            to=to,
            person=person,
            message=message,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/messages/discord",
            body,
            MessageResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def teams(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        message: str,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/teams`` from the operator's bot: ``to`` is a Teams user id
        (``29:…``) of a person who installed the app (the install gave the service their
        chat with the bot). The next message they write in that chat is the answer."""
        body = build(
            TeamsMessageRequest,
            to=to,
            person=person,
            message=message,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/messages/teams",
            body,
            MessageResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def email(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        message: str,
        subject: str | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/email``: ``to`` an email address; without ``subject`` the
        message's first line is the subject. The human's reply to the email is the
        answer (without the quoted history)."""
        body = build(
            EmailMessageRequest,
            to=to,
            person=person,
            message=message,
            subject=subject,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/messages/email",
            body,
            MessageResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def person(
        self,
        person: str,
        *,
        message: str,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
        fallback_after: float | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/person``: to a person of the people directory (``per_…``) on
        the first of their confirmed addresses, in their order, whatever its channel;
        with ``fallback_after``, on their next one too when nobody answered by then."""
        body = build(
            PersonMessageRequest,
            person=person,
            message=message,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            metadata=metadata,
            fallback_after=fallback_after,
        )
        return self._post(
            "/messages/person",
            body,
            MessageResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def channel(
        self,
        channel_id: str,
        *,
        message: str,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[MessageResponse]:
        """``POST /messages/{channel_id}``: the card supplies recipient, windows, templates."""
        # Anything else would land on /messages/sms and friends with a body they refuse.
        if not isinstance(channel_id, str) or not channel_id.startswith("ch_"):
            raise invalid_request(
                f"channel_id must be a channel card id (ch_…), got {channel_id!r}",
                field="channelId",
            )
        body = build(ChannelMessageRequest, message=message, metadata=metadata)
        return self._post(
            f"/messages/{path_id(channel_id, 'channelId')}",
            body,
            MessageResponse,
            # The card's waitTime lives in the service; a call card may hold to the call end.
            wait=CHANNEL_MESSAGE_READ_TIMEOUT - WAIT_MARGIN,
            idempotency_key=idempotency_key,
        )
