"""A contract fake of Telnyx, for testing a humanwire deployment (or anything that talks
to Telnyx's REST API v2) offline. Needs ``humanwire[telnyx]`` (the ``telnyx`` package's
request types are the contract; ``cryptography`` signs the callbacks).

::

    from humanwire.testing.telnyx import CalleeScript, FakeTelnyx, telnyx_fake

    with telnyx_fake() as telnyx:                 # a local Telnyx on a free loopback port
        fake = telnyx.fake
        fake.add_number("+13125550142")           # the operator's numbers
        # point the code under test at it: api_base = telnyx.api_base, api_key =
        # fake.api_key, public_key = fake.public_key, connection_id = fake.connection_id,
        # account_sid = fake.account_sid
        fake.messaging_webhook_url = ".../providers/telnyx/messages"  # as set in the portal
        ...
        fake.send_inbound("+12025550100", "+13125550142", "yes")     # the human replies
        fake.callee("+12025550100", CalleeScript(says=["Friday works", None]))
        fake.wait_idle()
        assert fake.violations == []              # the code never sent Telnyx a bad request

**What it checks.** Every REST request (``Authorization: Bearer <api_key>``, else 401
``10009``) against the ``telnyx`` package's published request types, generated from
Telnyx's OpenAPI description: the operation (method and path), then every parameter of
the JSON body, or of the query in deepObject form (``filter[phone_number]=…``), against
the operation's ``TypedDict``: wire names (the types' aliases: ``From``, ``Url``,
``page[size]``), required ones, types, enums (``Literal``), nested objects and arrays
(``contract``). A request that breaks it is answered 422 with Telnyx's error body
``{"errors": [{"code": "10015", "title", "detail", "source": {"pointer"}}]}`` and
recorded in ``fake.violations``. Then the rules Telnyx states in prose: a message or call
comes ``from`` one of the account's numbers (``40305``), goes to an E.164 number
(``40310``; calls ``10016``), a message has ``text`` or ``media_urls``; a call's
``ApplicationSid`` is the account's TeXML application; the path's account id is the
account's.

**Endpoints** (under ``/v2``): ``POST /messages``; ``GET /phone_numbers``
(``filter[phone_number]``), ``PATCH /phone_numbers/{id}`` (``connection_id``), ``PATCH
/phone_numbers/{id}/messaging`` (``messaging_profile_id``), ``DELETE
/phone_numbers/{id}``; ``GET /available_phone_numbers`` (``filter[country_code]``,
``filter[national_destination_code]``…), ``POST /number_orders``; ``POST
/texml/Accounts/{account_sid}/Calls`` (create) and ``…/Calls/{call_sid}`` (update:
``Status=completed`` ends it).

**Test controls** (``FakeTelnyx``; thread-safe): ``api_key``, ``public_key`` (the
public half of an Ed25519 key pair the fake made), ``account_sid``, ``connection_id``,
``messaging_profile_id``; ``numbers``, ``available``, ``messages``, ``calls``,
``requests``, ``callbacks``, ``violations``, ``errors``, ``reset()``; ``add_number``,
``add_available``, ``number``, ``sent_to``, ``calls_to``; failures ``refuse(to,
code="40310")``, ``fail_delivery(to, status="delivery_failed")``, ``fail_next(status,
retry_after=None)``; ``messaging_webhook_url`` (the profile's inbound webhook),
``voice_url`` / ``status_callback`` (the TeXML application's, for inbound calls);
``send_inbound(from_, to, text, media_urls=(), message_id=None)`` posts a signed
``message.received``; after each message ``message.sent`` then ``message.finalized``
(``delivered`` or the injected failure) go to its ``webhook_url``; ``post_signed(url,
body, headers=None, timestamp=None)`` for security tests; ``sign(body, timestamp)`` the
headers Telnyx would send. Calls: ``callee(phone, CalleeScript(...))`` (the Twilio fake's
script: ``answer``, ``says``, ``hang_up_after``…) and ``inbound_call(from_, to, script)``;
the fake runs the call's TeXML with Twilio-compatible form callbacks (``CallSid``,
``CallStatus``, ``Direction``, ``AnsweredBy`` with ``MachineDetection``, ``SpeechResult``):
``<Say>`` → ``call.said``, ``<Gather>`` → the next of ``says`` to its action (silence
goes on after it), ``<Redirect>``, ``<Dial>`` → ``call.transferred_to``, ``<Hangup/>``;
then the final status to ``StatusCallback``. ``wait_for(predicate)``, ``wait_idle()``.
``<Connect><ConversationRelay url=…>`` (relay mode): the fake opens the WebSocket at the
URL as given (Telnyx signs no handshake), sends Telnyx's ``setup`` (``relay_setup =
False``: never), plays the same callee as the Twilio fake (a sentence a final ``prompt``,
digits ``dtmf``, None silence, ``BargeIn`` an ``interrupt``), records every frame the
service sends in ``call.relay_messages`` and counts one outside Telnyx's published frames
(``RELAY_FRAMES``) as a violation; when the session ends it asks the ``<Connect>``'s
action what follows.

Every callback is signed as Telnyx signs: ``telnyx-timestamp`` and
``telnyx-signature-ed25519``, the Ed25519 signature of ``"{timestamp}|{raw body}"``.

**Serving.** ``TelnyxFakeServer(fake=None)`` serves it with uvicorn in a daemon thread
(``base_url``; ``api_base`` is ``base_url + "/v2"``); ``telnyx_fake()`` is the same as a
context manager. With the official client: ``telnyx.Telnyx(api_key=fake.api_key,
base_url=server.api_base)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .contract import ContractViolation, check, query
from .fake import (
    RELAY_FRAMES,
    BargeIn,
    CalleeScript,
    FakeCall,
    FakeMessage,
    FakeNumber,
    FakeRequest,
    FakeTelnyx,
    Violation,
)
from .server import TelnyxFakeServer

__all__ = [
    "RELAY_FRAMES",
    "BargeIn",
    "CalleeScript",
    "ContractViolation",
    "FakeCall",
    "FakeMessage",
    "FakeNumber",
    "FakeRequest",
    "FakeTelnyx",
    "TelnyxFakeServer",
    "Violation",
    "check",
    "query",
    "telnyx_fake",
]


@contextmanager
def telnyx_fake(fake: FakeTelnyx | None = None) -> Iterator[TelnyxFakeServer]:
    """``with telnyx_fake() as telnyx:`` — the fake (``telnyx.fake``) served at
    ``telnyx.api_base`` for the block."""
    server = TelnyxFakeServer(fake)
    server.start()
    try:
        yield server
    finally:
        server.stop()
