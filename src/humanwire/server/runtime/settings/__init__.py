"""``humanwire serve``'s settings: a TOML file, the ``HUMANWIRE_*`` environment and flags.

One precedence rule: flags beat the environment, which beats the file, which beats the
defaults (docs/providers.md "Configuration")::

    settings = load_settings("humanwire.toml", os.environ, {"port": 8080})
    config = settings.to_service_config()

Every key of the file can come from the environment as ``HUMANWIRE_<SECTION>_<KEY>``
(top-level keys as ``HUMANWIRE_<KEY>``), except the tables inside a section
(``twilio.whatsapp_templates``), which only the file has. An empty variable counts as
unset. A relative ``db`` in the file is relative to the file's directory.

Sections: the service's tunables (``[limits]``, ``[spam]``, ``[webhooks]``, ``[calls]``,
``[inbox]``, ``[http]``, ``[audit]``, mapped onto :class:`ServiceConfig` by
:data:`SERVICE_CONFIG_FIELDS`) and the providers (``[twilio]``, ``[slack]``, ``[voice]``).
:func:`effective_configuration` is what ``humanwire serve --print-config`` shows;
:func:`config_reference` the table of
docs/operating/configuration.md.

Nothing unknown or invalid is let through: an unknown key, a bad value or a
half-configured provider raises :class:`SettingsError`, naming the key and where its
value came from (the file, the variable, the flag), never the value of a secret.

The package, by role: ``keys`` (a key's names), ``checks`` (the value checks, the strict
model), the sections (``providers``, ``email``, ``tunables``, ``audit``, ``addresses``),
``service`` (the root :class:`Settings`), ``sources`` (:func:`load_settings`) and
``reference`` (the generated reference, the effective configuration).
"""

from __future__ import annotations

from .addresses import AddressSettings
from .audit import AuditSettings
from .checks import SettingsError
from .email import EmailSettings
from .keys import ENV_PREFIX
from .providers import (
    SlackSettings,
    TelephonySettings,
    TelnyxSettings,
    TwilioSettings,
    VoiceSettings,
    WhatsAppTemplates,
)
from .reference import (
    REFERENCE_END,
    REFERENCE_START,
    config_reference,
    effective_configuration,
    format_configuration,
    write_reference,
)
from .service import Settings
from .sources import DATABASE_URL_ENV, FLAG_KEYS, env_var_names, load_settings
from .tunables import (
    SERVICE_CONFIG_FIELDS,
    CallsSettings,
    HttpSettings,
    InboxSettings,
    LimitsSettings,
    SpamSettings,
    WebhooksSettings,
)

__all__ = [
    "DATABASE_URL_ENV",
    "ENV_PREFIX",
    "FLAG_KEYS",
    "REFERENCE_END",
    "REFERENCE_START",
    "SERVICE_CONFIG_FIELDS",
    "AddressSettings",
    "AuditSettings",
    "CallsSettings",
    "EmailSettings",
    "HttpSettings",
    "InboxSettings",
    "LimitsSettings",
    "Settings",
    "SettingsError",
    "SlackSettings",
    "SpamSettings",
    "TelephonySettings",
    "TelnyxSettings",
    "TwilioSettings",
    "VoiceSettings",
    "WebhooksSettings",
    "WhatsAppTemplates",
    "config_reference",
    "effective_configuration",
    "env_var_names",
    "format_configuration",
    "load_settings",
    "write_reference",
]
