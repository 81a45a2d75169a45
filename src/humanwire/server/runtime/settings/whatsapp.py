"""``[whatsapp]``: which provider carries whatsapp, and Meta's Cloud API when it is
``meta`` (docs/going-live/whatsapp-meta.md). Twilio's WhatsApp keys stay in ``[twilio]``
(``whatsapp_from``, ``whatsapp_templates``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, SecretStr

from ...config import MetaWhatsAppConfig
from .checks import E164, HttpURL, _about, _Strict

__all__ = ["MetaTemplates", "WhatsAppSettings"]

_DIGITS = re.compile(r"[0-9]{5,20}")
_TEMPLATE = re.compile(r"[a-z0-9_]{1,512}")
_VERSION = re.compile(r"v[0-9]{2}\.[0-9]")


def _phone_number_id(value: str) -> str:
    if not _DIGITS.fullmatch(value):
        raise ValueError("must be the phone number's id (digits, WhatsApp Manager → API Setup)")
    return value


def _template(value: str) -> str:
    if not _TEMPLATE.fullmatch(value):
        raise ValueError("must be a template's name (lower-case letters, digits and _)")
    return value


def _version(value: str) -> str:
    if not _VERSION.fullmatch(value):
        raise ValueError("must be a Graph API version such as v23.0")
    return value


def _secret(value: SecretStr | None) -> SecretStr | None:
    if value is not None and not value.get_secret_value().strip():
        raise ValueError("must not be empty")
    return value


_META_KEYS = ("phone_number_id", "sender", "access_token", "app_secret", "verify_token")

Template = Annotated[str, AfterValidator(_template)]


class MetaTemplates(_Strict):
    """Approved templates' names, each with one body variable (``{{1}}``), sent outside
    the 24-hour window."""

    notification: Annotated[
        Template | None, _about("The template a message goes out as outside the window.")
    ] = None
    request: Annotated[
        Template | None, _about("The template a question goes out as outside the window.")
    ] = None
    form: Annotated[
        Template | None, _about("The template a form's link goes out as outside the window.")
    ] = None


class WhatsAppSettings(_Strict):
    provider: Annotated[
        Literal["twilio", "meta"],
        _about(
            "Which provider carries whatsapp: `twilio` (with `twilio.whatsapp_from`) or `meta` "
            "(Meta's Cloud API, the keys below)."
        ),
    ] = "twilio"
    phone_number_id: Annotated[
        Annotated[str, AfterValidator(_phone_number_id)] | None,
        _about("Meta: the business phone number's id (sends go to `/<it>/messages`)."),
    ] = None
    sender: Annotated[
        E164 | None,
        _about("Meta: the business phone number itself (E.164): the shared WhatsApp sender."),
    ] = None
    access_token: Annotated[
        SecretStr | None,
        AfterValidator(_secret),
        _about("Meta: a system user's access token with `whatsapp_business_messaging`."),
    ] = None
    app_secret: Annotated[
        SecretStr | None,
        AfterValidator(_secret),
        _about("Meta: the app secret every webhook's `X-Hub-Signature-256` is checked with."),
    ] = None
    verify_token: Annotated[
        SecretStr | None,
        AfterValidator(_secret),
        _about(
            "Meta: the token the webhook's subscription handshake (`hub.verify_token`) must give."
        ),
    ] = None
    api_base: Annotated[
        HttpURL, _about("Meta: the Graph API's address; tests point it at the fake.")
    ] = MetaWhatsAppConfig.api_base
    api_version: Annotated[
        Annotated[str, AfterValidator(_version)], _about("Meta: the Graph API version.")
    ] = MetaWhatsAppConfig.api_version
    templates: Annotated[
        MetaTemplates,
        _about("Meta: approved templates' names for outside the 24-hour window (file only)."),
    ] = Field(default_factory=MetaTemplates)
    template_language: Annotated[str, _about("Meta: the templates' language code.")] = (
        MetaWhatsAppConfig.template_language
    )

    @property
    def given(self) -> bool:
        return self.provider == "meta"

    def problems(self) -> list[str]:
        if self.provider != "meta":
            meta = [key for key in _META_KEYS if key in self.model_fields_set]
            if meta:
                return [f'whatsapp.{meta[0]} is Meta\'s: set whatsapp.provider = "meta" to use it']
            return []
        missing = [key for key in _META_KEYS if getattr(self, key) is None]
        if not missing:
            return []
        keys = ", ".join(f"whatsapp.{key}" for key in missing)
        return [f"whatsapp on Meta is half-configured: missing {keys}"]

    def config(self) -> MetaWhatsAppConfig | None:
        if self.provider != "meta" or self.problems():
            return None
        assert self.phone_number_id and self.sender and self.access_token
        assert self.app_secret and self.verify_token
        return MetaWhatsAppConfig(
            phone_number_id=self.phone_number_id,
            sender=self.sender,
            access_token=self.access_token.get_secret_value(),
            app_secret=self.app_secret.get_secret_value(),
            verify_token=self.verify_token.get_secret_value(),
            api_base=self.api_base,
            api_version=self.api_version,
            templates={k: v for k, v in self.templates.model_dump().items() if v},
            template_language=self.template_language,
        )
