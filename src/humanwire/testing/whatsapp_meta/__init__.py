"""A contract fake of WhatsApp through Meta's Cloud API, for testing a humanwire
deployment (or anything that sends through the Graph API and takes its webhooks)
offline. Needs ``jsonschema`` (``humanwire[testing]``).

::

    from humanwire.testing.whatsapp_meta import whatsapp_meta_fake

    with whatsapp_meta_fake() as meta:          # a local Graph API on a free loopback port
        fake = meta.fake
        ada = fake.add_person("Ada")            # ada.address is her number (E.164)
        # point the code under test at it: meta.api_base, fake.phone_number_id,
        # fake.access_token, fake.app_secret, fake.verify_token, fake.sender
        fake.webhook_url = "http://127.0.0.1:8000/providers/meta/whatsapp"
        fake.say(ada, "hello")                  # opens her 24-hour window
        ...
        sent = fake.sent_to(ada)[-1]
        fake.press(ada, sent, "Approve")        # a reply button, by title or id
        assert fake.violations == [] and fake.errors == []

**What it checks.** Every ``POST /v23.0/{phone number id}/messages`` against Meta's
published description (``whatsapp_business_messaging_v23.subset.json``, from
facebook/openapi, MIT, licence beside it; patched where it contradicts its own examples:
``spec``): the bearer token (190), the phone number id, the JSON body held to ``Message``
(≤ 3 reply buttons, titles ≤ 20 characters, no unknown key) and to the limits the
documentation states beside it (text ≤ 4,096, an interactive body ≤ 1,024, unique
titles). Refusals are Meta's ``{"error": {"message", "type", "code", "fbtrace_id"}}``
(100 for a body the description refuses, also in ``fake.violations``; 131026 for a
number that is not a WhatsApp user; a ``context.message_id`` that names no message). A
free-form message to a person outside their 24-hour window is taken and then failed
(status ``failed``, 131047), as Meta does; a template always goes.

**Webhooks** are signed (``X-Hub-Signature-256``) and shaped as in 2026: contacts carry
the business-scoped ``user_id`` beside ``wa_id``, messages ``from_user_id``; each is
checked against the description's webhook payload before it goes (``fake.errors``).

**Test controls:** ``add_person``; ``sent_to(person)`` (each ``WhatsAppSent`` with
``text``, ``buttons``, ``reply_to``, ``statuses``), ``state.requests``, ``violations``,
``errors``; people: ``say`` (quoting a message), ``press`` (a reply button), ``status``,
``post`` (a payload), ``post_signed`` (any body, with a given signature), ``handshake``
(the ``hub.verify_token`` subscription); ``message_payload`` / ``status_payload`` build
webhooks without sending them; ``wait_for``, ``wait_idle``.
"""

from __future__ import annotations

from .fake import FakeMetaWhatsApp
from .server import MetaWhatsAppFakeServer, whatsapp_meta_fake
from .spec import MetaSpec, SpecViolation, load_spec
from .state import MetaState, WhatsAppPerson, WhatsAppSent

__all__ = [
    "FakeMetaWhatsApp",
    "MetaSpec",
    "MetaState",
    "MetaWhatsAppFakeServer",
    "SpecViolation",
    "WhatsAppPerson",
    "WhatsAppSent",
    "load_spec",
    "whatsapp_meta_fake",
]
