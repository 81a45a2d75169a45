"""Test your agent against a real humanwire service, with a scripted human.

humanwire ships a pytest plugin (installed with the package, nothing to configure). It
starts the humanwire service once per test session on a free loopback port, with a
temporary database and fast webhook retries, and gives each test its own account, so
tests never see each other's messages. Everything runs offline.

Fixtures
--------

``humanwire_client`` / ``async_humanwire_client``
    A ``HumanWire`` / ``AsyncHumanWire`` for this test's account (closed after the test).
``human``
    A :class:`ScriptedHuman` for the same account: it plays the person your agent
    reaches, from a background thread, so it works in sync and async tests alike.
``webhook_receiver``
    A :class:`WebhookReceiver` on loopback recording every webhook delivery.
``humanwire_api_key``
    The API key of this test's fresh account (for code that builds its own client or
    reads ``HUMANWIRE_API_KEY``; the base URL is ``humanwire_service.base_url``).
``humanwire_service``
    The :class:`RunningService` (session scope): ``base_url``, ``config``,
    ``create_account()``.
``humanwire_config``
    The ``ServiceConfig`` the service starts with (session scope). Override it in your
    ``conftest.py`` to change a setting::

        @pytest.fixture(scope="session")
        def humanwire_config(tmp_path_factory):
            config = fast_config(tmp_path_factory.mktemp("hw") / "service.db")
            config.spam_recipients = 3
            return config

Real providers, offline
-----------------------

``humanwire.testing.twilio`` is a contract fake of Twilio (``humanwire[twilio]``): a local
Twilio that checks every request against Twilio's published API description, signs its
callbacks as Twilio does and plays the phone (replies, delivery failures, scripted
callees). Point ``twilio.api_base`` at it to test a deployment end to end with no
account; see that module's docstring. ``humanwire.testing.email`` is a recording SMTP relay
(``humanwire[email]``) for ``[email] smtp_host``.

``humanwire.testing.whatsapp_meta`` is a contract fake of WhatsApp through Meta's Cloud
API; give it to the scripted human (``ScriptedHuman(..., meta_whatsapp=fake)``) and the
human reads the whatsapp messages the fake took and answers through it (a quoted reply,
an approval's reply button, a form's link); see ``docs/going-live/whatsapp-meta.md``.

``humanwire.testing.telnyx`` is the same for Telnyx (``humanwire[telnyx]``): it checks
every request against the ``telnyx`` package's published request types, signs its webhooks
with an Ed25519 key pair it makes (the service is given ``fake.public_key``) and runs a
call's TeXML with scripted callees. Point ``telnyx.api_base`` at ``server.api_base``; see
that module's docstring and ``docs/going-live/telnyx.md``.

Example::

    def test_agent_asks_before_deploying(humanwire_client, human):
        human.reply("yes, go ahead")                       # script first ...
        result = humanwire_client.messages.sms(             # ... then run the agent
            message="Deploy to prod?", to="+12025550100", wait_time=5
        )
        assert result.response == "Human response: yes, go ahead"

    def test_agent_handles_silence(humanwire_client, human):
        silent = human.stay_silent()
        result = humanwire_client.messages.sms(message="Anyone?", to="+12025550100", wait_time=1)
        assert result.responded is False                  # a timeout is not an error
        assert silent.wait().text == "Anyone?"

    def test_form(humanwire_client, human):
        human.fill_form({"name": "Ada", "agree": True})
        result = humanwire_client.forms.sms(
            to="+12025550100", title="Sign up", wait_time=5,
            fields=[{"id": "name", "label": "Name", "type": "text"},
                    {"id": "agree", "label": "Agree", "type": "checkbox"}],
        )
        assert result.values == {"name": "Ada", "agree": "true"}

    def test_late_reply_reaches_the_webhook(humanwire_client, human, webhook_receiver):
        webhook_receiver.register(humanwire_client)
        human.reply_late("sorry, yes", after=1.5)
        humanwire_client.messages.sms(
            message="Ok?", to="+12025550100", wait_time=1, follow_up_time=60
        )
        [event] = webhook_receiver.wait_for("message.received")
        assert event.payload.body == "sorry, yes"

The scripted human
------------------

Script what the human will do *before* the code that reaches them runs. Each scripted
action returns a :class:`HumanAction`; ``action.wait(timeout=10)`` returns the
``SandboxDelivery`` it acted on (``.text`` exactly as the human saw it, ``.form_url``,
``.interaction_id``) and fails the test with a readable message listing what *was*
delivered when nothing matched. In async tests use ``await action.async_wait()``.

- ``reply(text, *, to=None, channel="sms", delay=0.0)``: answer the next message
  (slack: in its thread); ``reply_late(text, after=seconds)`` answers later, e.g. inside
  the follow-up window, so the answer goes to the webhooks.
- ``fill_form(values, *, to=None, channel=None, delay=0.0)``: open the next form link
  and submit ``values`` as a browser would; a refused submission fails ``wait()``.
- ``answer_call(summary)``, ``miss_call()``, ``transfer_call(summary=None)``: end the
  next outbound call as ``completed``, ``no_answer`` or ``transferred``.
- ``stay_silent(*, to=None, channel=None)``: let the next delivery go unanswered.
- ``send_text(text, *, from_=None, to=None, channel="sms")``: the human writes first
  (sent immediately; ``to`` defaults to the account's reserved number, else the shared
  number), and ``call_in(summary, *, to=None)``: someone calls the reserved number.
- ``deliveries(to=, channel=, interaction_id=)``: everything delivered, oldest first.

"Next" is precise: an action acts on the oldest matching delivery that arrived *after
the action was scripted* and that no earlier action claimed, so two ``reply`` calls
answer two messages in order, and scripting before the send is race-free. To act on
something already delivered, pass ``interaction_id=`` (returned by the send); an action
that fails (a refused form) leaves its delivery for the next one. ``to``
defaults to the inbox's default human: ``+12025550100`` (sms, whatsapp, calls) and
``U0HUMAN0001`` (slack).

The webhook receiver
--------------------

``webhook_receiver.register(client)`` (``await ...aregister(async_client)``) subscribes
it to all three events and remembers the secret, so every signature is verified (a bad
one is answered 401). ``deliveries`` records every request (method, path, headers, raw
body, parsed event, signature check, the status answered); ``events`` the accepted
events, one per ``Humanwire-Event-Id``. ``wait_for(event_type=None, *, count=1,
timeout=10)`` blocks until they arrived (``async_wait_for`` in async tests).
``set_status(503)`` or ``fail_next(2)`` make deliveries fail so you can test retries.

Outside pytest, the same pieces work directly::

    from humanwire.testing import ScriptedHuman, WebhookReceiver, start_test_service
"""

from .human import HumanAction, ScriptedHuman
from .receiver import ReceivedDelivery, WebhookReceiver
from .service import RunningService, fast_config, start_test_service

__all__ = [
    "HumanAction",
    "ReceivedDelivery",
    "RunningService",
    "ScriptedHuman",
    "WebhookReceiver",
    "fast_config",
    "start_test_service",
]
