"""The providers' sections: ``[twilio]`` (with its WhatsApp templates), ``[telnyx]``,
``[telephony]``, ``[slack]`` and ``[voice]``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
)

from ...config import (
    TELEPHONY_PROVIDERS,
    SlackConfig,
    TelnyxConfig,
    TwilioConfig,
)
from .checks import (
    E164,
    AccountSid,
    BotToken,
    ClientId,
    ContentSid,
    HttpURL,
    Secret,
    Switch,
    Text,
    _about,
    _carriers,
    _comma_separated,
    _ed25519_key,
    _Strict,
    _whatsapp_sender,
)

__all__ = [
    "SlackSettings",
    "TelephonySettings",
    "TelnyxSettings",
    "TwilioSettings",
    "VoiceSettings",
    "WhatsAppTemplates",
]


class WhatsAppTemplates(_Strict):
    """Content template SIDs of the spec's shared-account WhatsApp templates."""

    notification: Annotated[
        ContentSid | None,
        _about(
            "Content template SID (`HX…`) of the shared-account WhatsApp notification template."
        ),
    ] = None
    request: Annotated[
        ContentSid | None,
        _about("Content template SID of the shared-account WhatsApp request (question) template."),
    ] = None
    form: Annotated[
        ContentSid | None,
        _about("Content template SID of the shared-account WhatsApp form-link template."),
    ] = None


class TwilioSettings(_Strict):
    account_sid: Annotated[
        AccountSid | None,
        _about(
            "Twilio account SID (`AC…`); with `auth_token`, turns Twilio on for sms (and whatsapp,"
            " calls)."
        ),
    ] = None
    auth_token: Annotated[
        Secret | None,
        _about(
            "Twilio auth token: REST credentials, and the key `X-Twilio-Signature` is checked with."
        ),
    ] = None
    api_base: Annotated[HttpURL, _about("Twilio's REST address; tests point it at the fake.")] = (
        TwilioConfig.api_base
    )
    sms_from: Annotated[
        E164 | None,
        _about("The shared number texts and calls come from (E.164); required with Twilio."),
    ] = None
    whatsapp_from: Annotated[
        Annotated[str, AfterValidator(_whatsapp_sender)] | None,
        _about(
            "The shared WhatsApp sender (E.164, `whatsapp:` optional); without it WhatsApp stays "
            "on the sandbox."
        ),
    ] = None
    whatsapp_templates: Annotated[
        WhatsAppTemplates,
        _about("Content template SIDs of the shared-account WhatsApp templates (file only)."),
    ] = Field(default_factory=WhatsAppTemplates)
    numbers: Annotated[
        tuple[E164, ...],
        BeforeValidator(_comma_separated),
        _about(
            "The pool of the operator's numbers accounts may reserve (a list, or comma-separated "
            "in the variable)."
        ),
    ] = ()
    buy_numbers: Annotated[
        Switch,
        _about("Lets an account's reserve buy a number when the pool has none (it costs money)."),
    ] = False

    @property
    def given(self) -> bool:
        """Any key of the section was given: then it has to be complete."""
        return bool(self.model_fields_set)


class TelnyxSettings(_Strict):
    api_key: Annotated[
        Secret | None,
        _about(
            "Telnyx API key (`KEY…`); with `public_key`, turns Telnyx on for sms (and calls, "
            "with a TeXML application)."
        ),
    ] = None
    public_key: Annotated[
        Annotated[str, AfterValidator(_ed25519_key)] | None,
        _about(
            "The account's Ed25519 public key (base64, Mission Control, Keys & "
            "Credentials): every Telnyx webhook is verified with it."
        ),
    ] = None
    api_base: Annotated[
        HttpURL, _about("Telnyx's REST address (with `/v2`); tests point it at the fake.")
    ] = TelnyxConfig.api_base
    sms_from: Annotated[
        E164 | None,
        _about("The shared Telnyx number texts and calls come from (E.164); required with Telnyx."),
    ] = None
    messaging_profile_id: Annotated[
        Text | None,
        _about(
            "The messaging profile the numbers belong to; its inbound webhook is "
            "`<public_url>/providers/telnyx/messages`."
        ),
    ] = None
    connection_id: Annotated[
        Text | None,
        _about(
            "The TeXML application calls run on (its voice URL `<public_url>/providers/telnyx/"
            "voice`); with `account_sid` and a voice model, calls can go through Telnyx."
        ),
    ] = None
    account_sid: Annotated[
        Text | None,
        _about("The account id of Telnyx's TeXML REST API (`/texml/Accounts/<it>/Calls`)."),
    ] = None
    numbers: Annotated[
        tuple[E164, ...],
        BeforeValidator(_comma_separated),
        _about(
            "The pool of the operator's Telnyx numbers accounts may reserve (a list, or "
            "comma-separated in the variable)."
        ),
    ] = ()
    buy_numbers: Annotated[
        Switch,
        _about(
            "Lets an account's reserve buy a Telnyx number when no pool has one (it costs money)."
        ),
    ] = False

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)


class TelephonySettings(_Strict):
    order: Annotated[
        tuple[str, ...],
        BeforeValidator(_carriers),
        _about(
            "With Twilio and Telnyx both configured: which carries the shared sends first (a "
            "`from` or reserved number goes out through the provider that owns it)."
        ),
    ] = TELEPHONY_PROVIDERS


class SlackSettings(_Strict):
    bot_token: Annotated[
        BotToken | None,
        _about(
            "The shared workspace's bot token (`xoxb-…`); with `signing_secret`, turns Slack on."
        ),
    ] = None
    signing_secret: Annotated[
        Secret | None,
        _about("The Slack app's signing secret: every event and interaction is verified with it."),
    ] = None
    api_base: Annotated[HttpURL, _about("Slack's Web API address; tests point it at the fake.")] = (
        SlackConfig.api_base
    )
    client_id: Annotated[
        ClientId | None,
        _about(
            "The Slack app's client ID: with `client_secret`, accounts can install the bot in "
            "their own workspace (OAuth v2)."
        ),
    ] = None
    client_secret: Annotated[
        Secret | None, _about("The Slack app's client secret (OAuth v2 installs).")
    ] = None

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)


class VoiceSettings(_Strict):
    model: Annotated[
        Text | None,
        _about(
            "Chat model of the voice agent and of call summaries, as `init_chat_model` takes it "
            "(`openai:gpt-4o-mini`); without it calls stay on the sandbox."
        ),
    ] = None
    mode: Annotated[
        Literal["gather", "relay"],
        _about(
            "How calls talk, on Twilio and Telnyx alike: `gather` turn by turn (`<Gather>` "
            "speech, the whole answer per turn), `relay` over ConversationRelay's WebSocket "
            "(`<public_url>/providers/twilio/relay` or `/providers/telnyx/relay`, `wss://` "
            "behind HTTPS): the model's words spoken as they come, the person may interrupt "
            "(docs/guides/voice-modes.md)."
        ),
    ] = "gather"
