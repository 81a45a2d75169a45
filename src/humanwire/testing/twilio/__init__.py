"""A contract fake of Twilio, for testing a humanwire deployment (or anything that talks
to Twilio) offline.

::

    from humanwire.testing.twilio import CalleeScript, FakeTwilio, TwilioFakeServer

    with TwilioFakeServer() as twilio:        # a local Twilio on a free loopback port
        fake = twilio.fake
        fake.add_number("+14155550142")        # the operator's numbers
        # point the service at it: twilio.api_base = twilio.base_url, account_sid /
        # auth_token = fake.account_sid / fake.auth_token, sms_from = "+14155550142"
        ...
        fake.send_inbound("+12025550100", "+14155550142", "yes")   # the human replies
        fake.callee("+12025550100", CalleeScript(says=["Friday works", None]))
        assert fake.violations == []           # the service never sent a bad request

What it checks: every REST request against Twilio's published API description (path,
credentials, every parameter's name and type, required ones) and the rules Twilio
states in prose (body, media or template; ``From`` one of the account's numbers;
WhatsApp on both ends). Refusals get Twilio's error body (``code``, ``message``,
``more_info``, ``status``) and are recorded in ``fake.violations`` — except the refusals
a test asked for (``refuse``, ``fail_next``).

What it plays: status callbacks after each message (``sent``, then ``delivered`` or the
failure set with ``fail_delivery``); inbound texts (``send_inbound``, replays with the
same ``message_sid``); calls run against the service's TwiML by a scripted callee
(``callee``: a person saying ``says`` one Gather at a time, silence as None, an
answering machine, no answer, busy, failed), inbound calls (``inbound_call``). Callbacks
are signed as Twilio signs them (``X-Twilio-Signature`` computed by the ``twilio``
package) and posted to the exact URL the service gave. Needs ``humanwire[twilio]`` and
``jsonschema``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .fake import CalleeScript, FakeCall, FakeMessage, FakeNumber, FakeTwilio, Violation
from .server import TwilioFakeServer
from .spec import SpecViolation, TwilioSpec, load_spec

__all__ = [
    "CalleeScript",
    "FakeCall",
    "FakeMessage",
    "FakeNumber",
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
    """``with twilio_fake() as twilio:`` — the fake served for the block."""
    server = TwilioFakeServer(fake)
    server.start()
    try:
        yield server
    finally:
        server.stop()
