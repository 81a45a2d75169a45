"""Forms defined inline: ``/forms/sms``, ``/forms/slack``, ``/forms/telegram``,
``/forms/discord``, ``/forms/teams``, ``/forms/email``, ``/forms/whatsapp``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ConfigDict, TypeAdapter

from humanwire._http import Flow
from humanwire.types import (
    DiscordFormRequest,
    EmailFormRequest,
    FormField,
    FormResponse,
    SlackFormRequest,
    SMSFormRequest,
    TeamsFormRequest,
    TelegramFormRequest,
    WhatsAppFormRequest,
    WhatsAppOwnNumberFormRequest,
    WhatsAppSharedFormRequest,
    WhatsAppTemplate,
)

from ._base import ModeT, Resource, build, endpoint

__all__ = ["FieldSpec", "Forms"]

FieldSpec = FormField | Mapping[str, Any]
"""A form field as a model, or as a dict (snake_case or camelCase keys)."""

_WHATSAPP_FORM: TypeAdapter[WhatsAppSharedFormRequest | WhatsAppOwnNumberFormRequest] = TypeAdapter(
    WhatsAppFormRequest, config=ConfigDict(defer_build=True)
)


class Forms(Resource[ModeT]):
    """Send a link to a form and, with ``wait_time``, wait for the submitted values.

    At least one of ``wait_time`` and ``follow_up_time`` is required. Not submitted in
    time is not an error: ``responded`` is false and ``response`` has the no-response text.
    Each method takes ``to`` or, in its place, ``person`` (a person's id); with
    ``person``, ``fallback_after`` seconds later, the form not submitted, its message
    goes to the person's next confirmed address on that channel too (docs/people.md).
    """

    @endpoint
    def sms(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        title: str,
        fields: Sequence[FieldSpec],
        message: str | None = None,
        description: str | None = None,
        brand_image_url: str | None = None,
        submit_label: str | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[FormResponse]:
        """``POST /forms/sms``: ``message`` may hold ``{{url}}``."""
        body = build(
            SMSFormRequest,
            to=to,
            person=person,
            title=title,
            fields=list(fields),
            message=message,
            description=description,
            brand_image_url=brand_image_url,
            submit_label=submit_label,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/forms/sms", body, FormResponse, wait=body.wait_time, idempotency_key=idempotency_key
        )

    @endpoint
    def slack(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        title: str,
        fields: Sequence[FieldSpec],
        message: str | None = None,
        description: str | None = None,
        brand_image_url: str | None = None,
        submit_label: str | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        from_: str | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[FormResponse]:
        """``POST /forms/slack``: ``to`` a member or channel id, ``from_`` a workspace id."""
        body = build(
            SlackFormRequest,
            to=to,
            person=person,
            title=title,
            fields=list(fields),
            message=message,
            description=description,
            brand_image_url=brand_image_url,
            submit_label=submit_label,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            from_=from_,
            metadata=metadata,
        )
        return self._post(
            "/forms/slack", body, FormResponse, wait=body.wait_time, idempotency_key=idempotency_key
        )

    @endpoint
    def telegram(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        title: str,
        fields: Sequence[FieldSpec],
        message: str | None = None,
        description: str | None = None,
        brand_image_url: str | None = None,
        submit_label: str | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[FormResponse]:
        """``POST /forms/telegram``: ``to`` a chat id; the form page's link goes out from
        the shared bot (``message`` may hold ``{{url}}``)."""
        body = build(
            TelegramFormRequest,
            to=to,
            person=person,
            title=title,
            fields=list(fields),
            message=message,
            description=description,
            brand_image_url=brand_image_url,
            submit_label=submit_label,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/forms/telegram",
            body,
            FormResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def discord(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        title: str,
        fields: Sequence[FieldSpec],
        message: str | None = None,
        description: str | None = None,
        brand_image_url: str | None = None,
        submit_label: str | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[FormResponse]:
        """``POST /forms/discord``: ``to`` a Discord user id (a DM) or channel id; a form
        that fits one of Discord's modals (at most 5 text fields) is filled in Discord,
        any other by its page's link (``message`` may hold ``{{url}}``)."""
        body = build(
            DiscordFormRequest,
            to=to,
            person=person,
            title=title,
            fields=list(fields),
            message=message,
            description=description,
            brand_image_url=brand_image_url,
            submit_label=submit_label,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/forms/discord",
            body,
            FormResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def teams(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        title: str,
        fields: Sequence[FieldSpec],
        message: str | None = None,
        description: str | None = None,
        brand_image_url: str | None = None,
        submit_label: str | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[FormResponse]:
        """``POST /forms/teams``: ``to`` a Teams user id (``29:…``) of a person who
        installed the app; the form goes out from the operator's bot (``message`` may
        hold ``{{url}}``)."""
        body = build(
            TeamsFormRequest,
            to=to,
            person=person,
            title=title,
            fields=list(fields),
            message=message,
            description=description,
            brand_image_url=brand_image_url,
            submit_label=submit_label,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/forms/teams",
            body,
            FormResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )

    @endpoint
    def email(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        title: str,
        fields: Sequence[FieldSpec],
        subject: str | None = None,
        message: str | None = None,
        description: str | None = None,
        brand_image_url: str | None = None,
        submit_label: str | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[FormResponse]:
        """``POST /forms/email``: ``to`` an email address; ``subject`` defaults to the
        title; ``message`` may hold ``{{url}}``."""
        body = build(
            EmailFormRequest,
            to=to,
            person=person,
            title=title,
            fields=list(fields),
            subject=subject,
            message=message,
            description=description,
            brand_image_url=brand_image_url,
            submit_label=submit_label,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            metadata=metadata,
        )
        return self._post(
            "/forms/email", body, FormResponse, wait=body.wait_time, idempotency_key=idempotency_key
        )

    @endpoint
    def whatsapp(
        self,
        *,
        to: str | None = None,
        person: str | None = None,
        title: str,
        fields: Sequence[FieldSpec],
        description: str | None = None,
        brand_image_url: str | None = None,
        submit_label: str | None = None,
        wait_time: float | None = None,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        from_: str | None = None,
        template: WhatsAppTemplate | Mapping[str, Any] | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Flow[FormResponse]:
        """``POST /forms/whatsapp``. From the shared account by default (fixed wrapper
        text); with ``from_`` and ``template`` (both required then) from the account's own
        whatsapp number."""
        body = build(
            _WHATSAPP_FORM,
            to=to,
            person=person,
            title=title,
            fields=list(fields),
            description=description,
            brand_image_url=brand_image_url,
            submit_label=submit_label,
            wait_time=wait_time,
            follow_up_time=follow_up_time,
            fallback_after=fallback_after,
            from_=from_,
            template=template,
            metadata=metadata,
        )
        return self._post(
            "/forms/whatsapp",
            body,
            FormResponse,
            wait=body.wait_time,
            idempotency_key=idempotency_key,
        )
