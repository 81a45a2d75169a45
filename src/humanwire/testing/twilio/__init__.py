"""A contract fake of Twilio, for testing a humanwire deployment (or anything that talks
to Twilio's REST API) offline. Needs ``humanwire[twilio]`` (the ``twilio`` package signs
the callbacks; ``jsonschema`` checks requests against the description).

::

    from humanwire.testing.twilio import CalleeScript, FakeTwilio, twilio_fake

    with twilio_fake() as twilio:              # a local Twilio on a free loopback port
        fake = twilio.fake
        fake.add_number("+14155550142")        # the operator's numbers
        # point the code under test at it: api_base = twilio.base_url,
        # account_sid / auth_token = fake.account_sid / fake.auth_token
        ...
        fake.send_inbound("+12025550100", "+14155550142", "yes")   # the human replies
        fake.callee("+12025550100", CalleeScript(says=["Friday works", None]))
        fake.wait_idle()
        assert fake.violations == []           # the code never sent Twilio a bad request

With pytest::

    @pytest.fixture
    def twilio():
        with twilio_fake() as server:
            yield server

**What it checks.** Every REST request, against Twilio's published API description
(``twilio_api_v2010.subset.json``, from twilio-oai, MIT, licence beside it): the path
and method, HTTP Basic credentials (401, 20003), the path's account sid, and every
parameter of the form body (``application/x-www-form-urlencoded``) or query — names
(unknown ones refused, though Twilio itself only warns), required ones, types coerced
from their string form (``true``/``false``, integers, numbers, repeated keys for arrays)
then ``jsonschema`` (enums, patterns), formats (absolute URLs without ``_`` in the host,
TwiML documents, ISO dates). Then the rules Twilio states in prose: a message needs
``To``, ``From`` or ``MessagingServiceSid``, and a ``Body``, ``MediaUrl`` or
``ContentSid``; ``From`` is one of the account's numbers (21606; WhatsApp 63007); WhatsApp
on both ends or neither (21910); a malformed ``To`` is 21211; a call needs ``Url``,
``Twiml`` or ``ApplicationSid``; ``StatusCallbackEvent`` values; buying needs
``PhoneNumber`` or ``AreaCode``… (the codes: ``fake`` module docstring). A refusal is
answered with Twilio's error body ``{"code", "message", "more_info", "status"}`` and
recorded in ``fake.violations``; refusals a test asked for are answered alike but are
not violations.

**Endpoints** (under ``/2010-04-01/Accounts/{AccountSid}``): ``Messages.json`` (create,
list), ``Messages/{Sid}.json`` (fetch, redact, delete), ``Calls.json`` (create, list),
``Calls/{Sid}.json`` (fetch; update: ``Status=completed|canceled``, ``Url``, ``Twiml``
redirect a live call; delete), ``IncomingPhoneNumbers.json`` (list with ``PhoneNumber``
/ ``FriendlyName``; buy with ``PhoneNumber`` or ``AreaCode`` and the webhook URLs),
``IncomingPhoneNumbers/{Sid}.json`` (fetch, update ``SmsUrl``, ``SmsMethod``,
``VoiceUrl``, ``VoiceMethod``, ``StatusCallback``…, release),
``AvailablePhoneNumbers/{CountryCode}/Local.json`` (``AreaCode``, ``Contains``,
``InRegion``, ``InLocality``). Answers follow the description's response schemas.

**Test controls** (``FakeTwilio``; every one thread-safe):

- state: ``account_sid``, ``auth_token`` (random valid ones by default), ``numbers``
  (sid → ``FakeNumber`` with its ``sms_url`` / ``voice_url`` / methods / ``params``),
  ``available``, ``messages`` and ``calls`` (records with every parameter as sent, sid,
  ``status`` and ``statuses``), ``requests`` (``FakeRequest(method, path, params)``),
  ``callbacks`` (what the fake sent the service), ``violations``, ``errors``,
  ``reset()``; lookups ``number(phone)``, ``message(sid)``, ``call(sid)``,
  ``sent_to(to)``, ``calls_to(to)``.
- numbers: ``add_number(phone, sms_url=None, voice_url=None, *, status_callback=None)``
  (the operator's own; returns the ``PN`` sid), ``add_available(phone, country="US",
  area_code=None, *, locality=None, region=None)`` (for sale).
- failures: ``refuse(to, code=21211, status=400)`` (sends and calls to ``to`` are
  refused), ``fail_next(status=500, *, times=1, retry_after=None, match=None)``,
  ``delay(seconds)`` (every answer slower), ``fail_delivery(to, status="undelivered",
  error_code=30003)`` (accepted, then reported failed).
- status callbacks: after each message, ``sent`` then ``delivered`` (or the injected
  failure, with ``ErrorCode``) to its ``StatusCallback``, signed (``auto_status=True``;
  ``status_delay`` between create and the first); ``post_message_status(sid, status,
  error_code=None)`` posts one by hand.
- inbound: ``send_inbound(from_, to, body, *, media_urls=(), channel="sms", message_sid=
  None, url=None, profile_name="Test Human")`` posts a signed inbound message to the
  ``SmsUrl`` of ``to`` (or ``url``) as Twilio does (``MessageSid``, ``SmsSid``, ``From``,
  ``To`` with ``whatsapp:`` prefixes on WhatsApp, ``Body``, ``NumMedia``, ``MediaUrl0``…,
  ``MediaContentType0``…, ``ProfileName`` / ``WaId``) and returns the service's
  ``httpx.Response``; the same ``message_sid`` replays it. ``post_signed(url, params, *,
  signature=None, method="POST")`` for security tests (``signature="bad"``).
- calls: ``callee(phone, CalleeScript(answer="human"|"machine"|"no-answer"|"busy"|
  "failed", says=[...], hang_up_after=None, seconds_per_turn=0, ring_seconds=0))``
  scripts the person a created call reaches; the call then runs in the background:
  status callbacks for the ``StatusCallbackEvent`` asked (``initiated``, ``ringing``,
  ``answered``, ``completed`` — only ``completed`` when none is given; ``CallStatus``
  ``initiated`` / ``ringing`` / ``in-progress`` / the final one, with ``CallDuration``),
  answered calls request ``Url`` (or run ``Twiml``) with ``CallSid``, ``CallStatus``,
  ``Direction``, ``AnsweredBy`` (when ``MachineDetection`` is asked: ``human``, or
  ``machine_start`` / ``machine_end_beep`` for ``Enable`` / ``DetectMessageEnd``;
  ``AsyncAmd`` posts it to ``AsyncAmdStatusCallback`` instead) and play the TwiML:
  ``<Say>`` → ``call.said``; ``<Gather>`` → the next of ``says`` posted to its action as
  ``SpeechResult`` + ``Confidence`` (``Digits`` for a DTMF-only Gather), silence (None)
  falls through to the verbs after the Gather (``actionOnEmptyResult`` honoured);
  ``<Redirect>`` followed (relative URLs too); ``<Dial>`` (a number or ``<Number>``) →
  ``call.transferred_to``, then its ``action`` or the verbs after it, as Twilio does;
  ``<Hangup/>`` or the end of the document → ``completed``; ``<Pause>`` ignored,
  ``<Play>`` → ``call.played``; ``<Connect><ConversationRelay url=...>`` → the relay's
  WebSocket, opened signed (``X-Twilio-Signature`` over the URL), ``welcomeGreeting`` and
  the agent's ``text`` tokens (up to ``last``) → ``call.said``, each entry of ``says`` a
  final ``prompt`` (digits: ``dtmf``; None: nothing; ``BargeIn(text)``: ``interrupt``
  after the agent's first words, then ``text``) → ``call.heard``, every message received
  → ``call.relay_messages``; the agent's ``end`` (or the socket closing) asks the
  ``<Connect>``'s action (``SessionStatus``, ``HandoffData``). ``hang_up(call_sid)`` is
  the callee hanging up; a REST update ``Status=completed`` ends the call, also mid-loop
  (``canceled`` while ringing).
  ``inbound_call(from_, to, script)`` runs the same loop against the ``VoiceUrl`` of
  ``to`` (``Direction`` inbound) and returns the finished ``FakeCall``.
- waiting: ``wait_for(predicate, timeout=5)``, ``wait_idle(timeout=5)``.
- async twins usable from a test on another loop: ``asend_inbound``,
  ``apost_message_status``, ``apost_signed``, ``ainbound_call``, ``await_for``,
  ``await_idle``.

Callbacks are signed as Twilio signs them (``X-Twilio-Signature``, computed by
``twilio.request_validator.RequestValidator``) over the exact URL the code under test
gave, and sent from the server's loop with ``httpx`` (10 s timeouts).

**Serving.** ``TwilioFakeServer(fake=None, host="127.0.0.1", port=0)`` serves the fake
with uvicorn in a daemon thread (``start()`` / ``stop()`` / context manager,
``base_url``); ``twilio_fake(fake=None)`` is the same as a context manager. With the
official client: ``client = twilio.rest.Client(fake.account_sid, fake.auth_token)``
then ``client.api.base_url = server.base_url``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..callee import Answer, BargeIn, CalleeScript
from .fake import FakeTwilio
from .records import (
    REFUSAL_MESSAGES,
    FakeAvailable,
    FakeCall,
    FakeCallback,
    FakeMessage,
    FakeNumber,
    FakeRequest,
    Violation,
)
from .server import TwilioFakeServer
from .spec import SpecViolation, TwilioSpec, load_spec

__all__ = [
    "REFUSAL_MESSAGES",
    "Answer",
    "BargeIn",
    "CalleeScript",
    "FakeAvailable",
    "FakeCall",
    "FakeCallback",
    "FakeMessage",
    "FakeNumber",
    "FakeRequest",
    "FakeTwilio",
    "SpecViolation",
    "TwilioFakeServer",
    "TwilioSpec",
    "Violation",
    "load_spec",
    "twilio_fake",
]


@contextmanager
def twilio_fake(fake: FakeTwilio | None = None) -> Iterator[TwilioFakeServer]:
    """``with twilio_fake() as twilio:`` — the fake (``twilio.fake``) served at
    ``twilio.base_url`` for the block."""
    server = TwilioFakeServer(fake)
    server.start()
    try:
        yield server
    finally:
        server.stop()
