"""The scripted human: plays the recipient's side through the sandbox API and form links."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlsplit

import httpx
from pydantic import TypeAdapter

from humanwire.server.config import (
    DEFAULT_HUMAN_EMAIL,
    DEFAULT_HUMAN_PHONE,
    DEFAULT_HUMAN_SLACK,
    SHARED_EMAIL_ADDRESS,
    SHARED_SLACK_WORKSPACE,
    SHARED_SMS_NUMBER,
    SHARED_WHATSAPP_NUMBER,
)
from humanwire.server.delivery.discord.channel import SANDBOX_BOT as SANDBOX_DISCORD_BOT
from humanwire.server.delivery.teams.channel import SANDBOX_BOT as SANDBOX_TEAMS_BOT
from humanwire.server.delivery.telegram.channel import SANDBOX_BOT as SANDBOX_TELEGRAM_BOT
from humanwire.types import SandboxDelivery
from humanwire.types.sandbox import (
    DEFAULT_HUMAN_DISCORD,
    DEFAULT_HUMAN_TEAMS,
    DEFAULT_HUMAN_TELEGRAM,
)

if TYPE_CHECKING:
    from .whatsapp_meta import FakeMetaWhatsApp, WhatsAppPerson, WhatsAppSent

__all__ = ["HumanAction", "ScriptedHuman"]

_deliveries_adapter: TypeAdapter[list[SandboxDelivery]] = TypeAdapter(list[SandboxDelivery])

_SHARED_SENDER = {
    "sms": SHARED_SMS_NUMBER,
    "whatsapp": SHARED_WHATSAPP_NUMBER,
    "slack": SHARED_SLACK_WORKSPACE,
    "email": SHARED_EMAIL_ADDRESS,
    "telegram": SANDBOX_TELEGRAM_BOT,
    "teams": SANDBOX_TEAMS_BOT,
    "discord": SANDBOX_DISCORD_BOT,
}
_THREADED = ("slack", "email", "telegram", "discord")
"""A reply on these names its message: in its thread, a reply to that email, a reply to
that Telegram message (as a person swipes it), the Discord message's Reply button."""


class HumanAction:
    """A scripted action. ``wait()`` blocks until it was carried out and returns the
    delivery it acted on; it raises AssertionError when no matching delivery arrived in
    time or when carrying it out failed (a refused form, for example)."""

    def __init__(self, human: ScriptedHuman, description: str) -> None:
        self._human = human
        self.description = description
        self._done = threading.Event()
        self.delivery: SandboxDelivery | None = None
        """The delivery this action claimed (set as soon as it is matched)."""
        self.error: str | None = None
        self.response: httpx.Response | None = None
        """The service's answer to what the human did (None for ``stay_silent``)."""

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float = 10.0) -> SandboxDelivery:
        if not self._done.wait(timeout):
            raise AssertionError(
                f"scripted human: {self.description}: no matching delivery within "
                f"{timeout:g}s.\n{self._human._describe_seen()}"
            )
        if self.error is not None:
            raise AssertionError(f"scripted human: {self.description}: {self.error}")
        assert self.delivery is not None
        return self.delivery

    async def async_wait(self, timeout: float = 10.0) -> SandboxDelivery:
        """``wait`` without blocking the event loop of an async test."""
        import asyncio

        return await asyncio.to_thread(self.wait, timeout)

    def __repr__(self) -> str:
        state = "done" if self.done else "pending"
        return f"<HumanAction {self.description} ({state})>"


@dataclass
class _Pending:
    action: HumanAction
    channels: frozenset[str] | None
    kinds: frozenset[str]
    recipients: frozenset[str] | None
    interaction_id: str | None
    existing: frozenset[str]
    """Ids delivered before the action was scripted: never "next" for it."""
    delay: float
    perform: Callable[[SandboxDelivery], httpx.Response | None]
    matched: bool = field(default=False)
    wanted: Callable[[SandboxDelivery], bool] | None = None
    """A further test of the delivery (an approval action wants a text with a page link)."""

    def accepts(self, delivery: SandboxDelivery) -> bool:
        if self.wanted is not None and not self.wanted(delivery):
            return False
        if self.interaction_id is not None:
            if delivery.interaction_id != self.interaction_id:
                return False
        elif delivery.id in self.existing:
            return False
        if delivery.kind not in self.kinds:
            return False
        if self.channels is not None and delivery.channel not in self.channels:
            return False
        return self.recipients is None or delivery.to in self.recipients


_APPROVAL_PAGE = re.compile(r"https?://\S+/a/[A-Za-z0-9_-]+")
_FORM_PAGE = re.compile(r"https?://\S+/f/[A-Za-z0-9_-]+")
_META_POLL = 0.2
"""Seconds between looks at the Meta fake's sends (the service's long-poll does not see
them)."""


def approval_page(text: str) -> str | None:
    """The approval page's address in a delivered text, if it carries one."""
    found = _APPROVAL_PAGE.search(text)
    return found.group(0) if found else None


class ScriptedHuman:
    """Plays the human for one account, from a background thread.

    Script what the human will do, then run the code under test::

        human.reply("yes, ship it")            # to the next sms to +12025550100
        result = client.messages.sms(message="Ship?", to="+12025550100", wait_time=5)
        assert result.response == "Human response: yes, ship it"

    **Which delivery an action acts on.** Each action acts on the *oldest* delivery that
    matches it (recipient, channel, kind), that reached the recipient *after the action
    was scripted*, and that no earlier action of this human has claimed. Scripting takes
    a snapshot of what was already delivered, so scripting before the send — the common
    case — is race-free, and two ``reply`` calls answer two messages in order. To act on
    something already delivered, pass ``interaction_id=`` (the id returned by a send):
    the action then matches that interaction's delivery whenever it arrived, even one
    acted on before. An action that fails (a refused form) leaves its delivery unclaimed.

    Defaults: ``to`` is the inbox's default human — ``+12025550100`` for sms, whatsapp
    and calls, ``U0HUMAN0001`` for slack, ``human@example.com`` for email, the chat
    ``100000001`` for telegram (from the sandbox's bot ``7000000001``), the user
    ``29:humanwire-inbox-human`` for teams (their chat with the sandbox's bot), the user
    ``1100000000000000100`` for discord (DMs from the sandbox's bot); a form
    (``channel=None``) may come by any channel to any of them. ``delay`` counts from the
    moment the delivery is seen.

    **WhatsApp through Meta's Cloud API.** When the service's whatsapp goes through
    ``humanwire.testing.whatsapp_meta``'s contract fake (``[whatsapp] provider = "meta"``),
    pass it as ``meta_whatsapp=``: the human then reads the whatsapp messages the fake took
    for its people (``to`` is a person's ``address``) and answers through it, as on their
    phone: ``reply`` quotes the message, ``decide_approval`` presses the request's reply
    button (with a ``comment``, it decides on the approval page instead), ``fill_form``
    opens the form's link, ``send_text`` writes first. The service's own replies (an
    approval's outcome) are not deliveries to act on.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        phone: str = DEFAULT_HUMAN_PHONE,
        slack_id: str = DEFAULT_HUMAN_SLACK,
        email: str = DEFAULT_HUMAN_EMAIL,
        telegram_chat: str = DEFAULT_HUMAN_TELEGRAM,
        teams_user: str = DEFAULT_HUMAN_TEAMS,
        discord_user: str = DEFAULT_HUMAN_DISCORD,
        poll_wait: float = 1.0,
        http_timeout: float = 15.0,
        meta_whatsapp: FakeMetaWhatsApp | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.phone = phone
        self.slack_id = slack_id
        self.email = email
        self.telegram_chat = telegram_chat
        self.teams_user = teams_user
        self.discord_user = discord_user
        self._meta = meta_whatsapp
        self._meta_sent: dict[str, WhatsAppSent] = {}
        """Deliveries read from the Meta fake, by Meta's message id."""
        self._sandbox_newest: str | None = None
        self._poll_wait = min(poll_wait, _META_POLL) if meta_whatsapp is not None else poll_wait
        headers = {"Authorization": f"Bearer {api_key}"}
        timeout = httpx.Timeout(http_timeout, read=http_timeout + poll_wait)
        # One client per thread role: httpx clients are not meant to be shared freely.
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, trust_env=False
        )
        self._poll_http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, trust_env=False
        )
        # The "browser" that opens form links: the token is the credential, no key sent.
        self._browser = httpx.Client(timeout=timeout, trust_env=False)
        self._cond = threading.Condition()
        self._pending: list[_Pending] = []
        self._known: dict[str, SandboxDelivery] = {}
        self._order: dict[str, int] = {}
        self._claimed: set[str] = set()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._workers: list[threading.Thread] = []
        self._long_poll = True
        self._poll_error: str | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        """Stops the background thread; pending actions are abandoned."""
        self._closed.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(self._poll_wait + 5)
        for worker in self._workers:
            worker.join(5)
        self._http.close()
        self._poll_http.close()
        self._browser.close()

    def __enter__(self) -> ScriptedHuman:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- scripted actions -------------------------------------------------------------------
    def reply(
        self,
        text: str,
        *,
        to: str | None = None,
        channel: str = "sms",
        delay: float = 0.0,
        interaction_id: str | None = None,
    ) -> HumanAction:
        """Reply ``text`` to the next message delivered to ``to`` on ``channel`` (slack:
        in the message's thread; email: a reply to that email; telegram: a reply to that
        message in the chat; discord: through that message's Reply button; sms, whatsapp
        and teams: from the human's number or chat back to the sender, as on a phone)."""
        recipient = to or self._default_recipient(channel)

        def perform(delivery: SandboxDelivery) -> httpx.Response:
            sent = self._meta_sent.get(delivery.id)
            if sent is not None:
                person = self._meta_person(delivery.to)
                return self._expect_ok(self._meta_fake().say(person, text, reply_to=sent))
            body: dict[str, Any] = {
                "channel": delivery.channel,
                "from": delivery.to,
                "to": delivery.from_ or _SHARED_SENDER[delivery.channel],
                "body": text,
            }
            if delivery.channel in _THREADED and delivery.interaction_id:
                body["interactionId"] = delivery.interaction_id
            return self._expect_ok(self._http.post("/sandbox/replies", json=body))

        return self._script(
            f"reply({text!r}) to the next {channel} message to {recipient}",
            channels=frozenset({channel}),
            kinds=frozenset({"message"}),
            recipients=frozenset({recipient}),
            interaction_id=interaction_id,
            delay=delay,
            perform=perform,
        )

    def reply_late(
        self,
        text: str,
        *,
        after: float,
        to: str | None = None,
        channel: str = "sms",
        interaction_id: str | None = None,
    ) -> HumanAction:
        """``reply`` ``after`` seconds: past ``waitTime``, inside the follow-up window, the
        reply goes to the webhooks instead of the held request."""
        return self.reply(text, to=to, channel=channel, delay=after, interaction_id=interaction_id)

    def fill_form(
        self,
        values: Mapping[str, str | bool],
        *,
        to: str | None = None,
        channel: str | None = None,
        delay: float = 0.0,
        interaction_id: str | None = None,
    ) -> HumanAction:
        """Open the next form link delivered to ``to`` and submit ``values`` (field id →
        text; ``True``/``False`` for checkboxes) as JSON ``{"values": ...}`` to the form's
        URL, as a browser would. A refused submission makes ``wait()`` fail with the
        service's error (``action.response`` holds it)."""
        submitted = {
            key: ("true" if value else "false") if isinstance(value, bool) else value
            for key, value in values.items()
        }
        if to is not None:
            recipients: frozenset[str] = frozenset({to})
        elif channel is not None:
            recipients = frozenset({self._default_recipient(channel)})
        else:
            recipients = frozenset(
                {
                    self.phone,
                    self.slack_id,
                    self.email,
                    self.telegram_chat,
                    self.teams_user,
                    self.discord_user,
                }
            )

        def perform(delivery: SandboxDelivery) -> httpx.Response:
            if not delivery.form_url:
                raise _ActionFailed(f"the delivery {delivery.id} carries no formUrl")
            response = self._browser.post(delivery.form_url, json={"values": submitted})
            return self._expect_ok(response)

        return self._script(
            f"fill_form({submitted!r}) for the next form to {'/'.join(sorted(recipients))}",
            channels=frozenset({channel}) if channel is not None else None,
            kinds=frozenset({"form"}),
            recipients=recipients,
            interaction_id=interaction_id,
            delay=delay,
            perform=perform,
        )

    def decide_approval(
        self,
        decision: Literal["approve", "reject"] = "approve",
        comment: str | None = None,
        *,
        to: str | None = None,
        channel: str | None = None,
        delay: float = 0.0,
        interaction_id: str | None = None,
    ) -> HumanAction:
        """Open the approval page the next approval request's text to ``to`` links to
        (every approver's message carries it) and decide there, ``comment`` with it, as a
        browser posts the page's form. A refused decision makes ``wait()`` fail."""
        if to is not None:
            recipients: frozenset[str] | None = frozenset({to})
        elif channel is not None:
            recipients = frozenset({self._default_recipient(channel)})
        else:
            recipients = frozenset(
                {self.phone, self.slack_id, self.telegram_chat, self.teams_user, self.discord_user}
            )

        def perform(delivery: SandboxDelivery) -> httpx.Response:
            sent = self._meta_sent.get(delivery.id)
            if sent is not None and sent.buttons and not comment:
                title = "Approve" if decision == "approve" else "Reject"
                person = self._meta_person(delivery.to)
                return self._expect_ok(self._meta_fake().press(person, sent, title))
            link = approval_page(delivery.text)
            if link is None:
                raise _ActionFailed(f"the delivery {delivery.id} carries no approval page link")
            data = {"decision": decision, **({"comment": comment} if comment else {})}
            return self._expect_ok(self._browser.post(link, data=data, follow_redirects=True))

        return self._script(
            f"decide_approval({decision!r}) for the next approval to {recipients}",
            channels=frozenset({channel}) if channel is not None else None,
            kinds=frozenset({"message", "form", "approval"}),
            recipients=recipients,
            interaction_id=interaction_id,
            delay=delay,
            perform=perform,
            wanted=lambda delivery: (
                approval_page(delivery.text) is not None
                or (not comment and bool(self._buttons_of(delivery)))
            ),
        )

    def answer_call(
        self,
        summary: str,
        *,
        to: str | None = None,
        delay: float = 0.0,
        interaction_id: str | None = None,
    ) -> HumanAction:
        """Pick up the next call to ``to``; the call ends ``completed`` with ``summary``."""
        return self._end_call("completed", summary, to, delay, interaction_id)

    def miss_call(
        self, *, to: str | None = None, delay: float = 0.0, interaction_id: str | None = None
    ) -> HumanAction:
        """Let the next call ring out: outcome ``no_answer``."""
        return self._end_call("no_answer", None, to, delay, interaction_id)

    def transfer_call(
        self,
        summary: str | None = None,
        *,
        to: str | None = None,
        delay: float = 0.0,
        interaction_id: str | None = None,
    ) -> HumanAction:
        """Ask for a human on the next call: outcome ``transferred``."""
        return self._end_call("transferred", summary, to, delay, interaction_id)

    def stay_silent(self, *, to: str | None = None, channel: str | None = None) -> HumanAction:
        """Claim the next delivery to ``to`` (any kind) and do nothing with it, so a test
        can ``wait()`` for it to have arrived while the agent's wait runs out."""
        if to is not None:
            recipients: frozenset[str] = frozenset({to})
        elif channel is not None:
            recipients = frozenset({self._default_recipient(channel)})
        else:
            recipients = frozenset(
                {
                    self.phone,
                    self.slack_id,
                    self.email,
                    self.telegram_chat,
                    self.teams_user,
                    self.discord_user,
                }
            )
        return self._script(
            f"stay_silent on the next delivery to {'/'.join(sorted(recipients))}",
            channels=frozenset({channel}) if channel is not None else None,
            kinds=frozenset({"message", "form", "call"}),
            recipients=recipients,
            interaction_id=None,
            delay=0.0,
            perform=lambda delivery: None,
        )

    # -- immediate actions -----------------------------------------------------------------------
    def send_text(
        self,
        text: str,
        *,
        from_: str | None = None,
        to: str | None = None,
        channel: str = "sms",
        media_urls: list[str] | None = None,
    ) -> None:
        """The human writes first: an unsolicited text, sent now. ``to`` defaults to the
        account's reserved number, else the shared number (slack: the shared workspace;
        telegram: the sandbox's bot; whatsapp with ``meta_whatsapp``: the fake's business
        number, from the person whose address ``from_`` is)."""
        if channel == "whatsapp" and self._meta is not None:
            person = self._meta_person(from_ or self.phone)
            self._immediate("send_text", self._meta.say(person, text))
            return
        body: dict[str, Any] = {
            "channel": channel,
            "from": from_ or self._default_recipient(channel),
            "to": to or self._account_number(channel),
            "body": text,
        }
        if media_urls is not None:
            body["mediaUrls"] = media_urls
        self._immediate("send_text", self._http.post("/sandbox/replies", json=body))

    def open_start_link(self, link: str, *, chat: str | None = None) -> None:
        """The person opens a Telegram start link (``startLink`` of
        ``POST /people/{personId}/confirm``) in their chat with the sandbox's bot (``chat``,
        default ``telegram_chat``), now: the chat becomes the person's address,
        confirmed. A token that is not valid fails (AssertionError)."""
        token = parse_qs(urlsplit(link).query).get("start", [""])[0]
        body = {
            "channel": "telegram",
            "from": chat or self.telegram_chat,
            "to": SANDBOX_TELEGRAM_BOT,
            "body": f"/start {token}",
        }
        self._immediate("open_start_link", self._http.post("/sandbox/replies", json=body))

    def call_in(self, summary: str, *, from_: str | None = None, to: str | None = None) -> None:
        """Someone calls the account's reserved number ``to`` (default: the reserved
        number) and leaves a message; the service reports ``call.conversation.ended``."""
        number = to or self._account_number("call")
        body = {"from": from_ or self.phone, "to": number, "summary": summary}
        self._immediate("call_in", self._http.post("/sandbox/inbound-calls", json=body))

    def deliveries(
        self,
        *,
        to: str | None = None,
        channel: str | None = None,
        interaction_id: str | None = None,
    ) -> list[SandboxDelivery]:
        """What was delivered to the account's recipients, oldest first."""
        params = {
            name: value
            for name, value in (("to", to), ("channel", channel), ("interactionId", interaction_id))
            if value is not None
        }
        response = self._http.get("/sandbox/messages", params=params)
        self._immediate("deliveries", response)
        return list(reversed(_deliveries_adapter.validate_json(response.content)))

    # -- internals --------------------------------------------------------------------------------
    def _default_recipient(self, channel: str) -> str:
        if channel == "email":
            return self.email
        if channel == "telegram":
            return self.telegram_chat
        if channel == "teams":
            return self.teams_user
        if channel == "discord":
            return self.discord_user
        return self.slack_id if channel == "slack" else self.phone

    def _account_number(self, channel: str) -> str:
        if channel == "slack":
            return SHARED_SLACK_WORKSPACE
        if channel == "telegram":
            return SANDBOX_TELEGRAM_BOT
        if channel == "teams":
            return SANDBOX_TEAMS_BOT
        if channel == "discord":
            return SANDBOX_DISCORD_BOT
        if channel == "email":
            return SHARED_EMAIL_ADDRESS
        response = self._http.get("/numbers")
        self._immediate("list numbers", response)
        numbers = response.json()
        if numbers:
            return str(numbers[0]["phoneNumber"])
        if channel == "call":
            raise AssertionError(
                "scripted human: call_in needs to= or a number reserved on the account"
            )
        return _SHARED_SENDER[channel]

    def _meta_fake(self) -> FakeMetaWhatsApp:
        assert self._meta is not None
        return self._meta

    def _meta_person(self, address: str) -> WhatsAppPerson:
        fake = self._meta_fake()
        with fake.state.lock:
            person = fake.state.people.get(address.removeprefix("+"))
        if person is None:
            raise _ActionFailed(f"the Meta fake has no person at {address}")
        return person

    def _buttons_of(self, delivery: SandboxDelivery) -> list[tuple[str, str]]:
        sent = self._meta_sent.get(delivery.id)
        return sent.buttons if sent is not None else []

    def _meta_deliveries(self) -> list[SandboxDelivery]:
        """What the Meta fake took for its people, newest first, as deliveries: the
        interaction an approval's buttons name, a form's link; the service's replies (an
        outcome quoting its request) left out."""
        if self._meta is None:
            return []
        fake = self._meta
        with fake.state.lock:
            sent = [(m, fake.state.people.get(m.to)) for m in fake.state.sent]
        found: list[SandboxDelivery] = []
        for message, person in sent:
            if person is None or message.reply_to is not None:
                continue
            self._meta_sent[message.id] = message
            ids = [ident.split(":")[1] for ident, _ in message.buttons if ident.count(":") >= 2]
            form = _FORM_PAGE.search(message.text)
            found.append(
                SandboxDelivery.model_validate(
                    {
                        "id": message.id,
                        "interactionId": ids[0] if ids else None,
                        "channel": "whatsapp",
                        "kind": "form" if form and not ids else "message",
                        "from": fake.sender,
                        "to": person.address,
                        "text": message.text,
                        "formUrl": form.group(0) if form and not ids else None,
                        "createdAt": datetime.fromtimestamp(message.at, timezone.utc),
                    }
                )
            )
        return list(reversed(found))

    def _immediate(self, what: str, response: httpx.Response) -> None:
        if not response.is_success:
            raise AssertionError(
                f"scripted human: {what} refused: {response.status_code} {response.text}"
            )

    def _expect_ok(self, response: httpx.Response) -> httpx.Response:
        if not response.is_success:
            raise _ActionFailed(
                f"the service answered {response.status_code} {response.text}", response
            )
        return response

    def _end_call(
        self,
        outcome: str,
        summary: str | None,
        to: str | None,
        delay: float,
        interaction_id: str | None,
    ) -> HumanAction:
        recipient = to or self.phone

        def perform(delivery: SandboxDelivery) -> httpx.Response:
            body: dict[str, Any] = {"outcome": outcome}
            if summary is not None:
                body["summary"] = summary
            path = f"/sandbox/calls/{delivery.interaction_id}"
            return self._expect_ok(self._http.post(path, json=body))

        return self._script(
            f"{outcome} the next call to {recipient}",
            channels=frozenset({"call"}),
            kinds=frozenset({"call"}),
            recipients=frozenset({recipient}),
            interaction_id=interaction_id,
            delay=delay,
            perform=perform,
        )

    def _script(
        self,
        description: str,
        *,
        channels: frozenset[str] | None,
        kinds: frozenset[str],
        recipients: frozenset[str] | None,
        interaction_id: str | None,
        delay: float,
        perform: Callable[[SandboxDelivery], httpx.Response | None],
        wanted: Callable[[SandboxDelivery], bool] | None = None,
    ) -> HumanAction:
        if self._closed.is_set():
            raise RuntimeError("the scripted human is closed")
        # The snapshot is what makes "next" race-free: it is taken before the test goes
        # on to send, so whatever arrives later is new for this action.
        snapshot = self._fetch(self._http, after=None, wait=None)
        action = HumanAction(self, description)
        pending = _Pending(
            action=action,
            channels=channels,
            kinds=kinds,
            recipients=recipients,
            interaction_id=interaction_id,
            existing=frozenset(delivery.id for delivery in snapshot),
            delay=delay,
            perform=perform,
            wanted=wanted,
        )
        with self._cond:
            self._merge(snapshot)
            self._pending.append(pending)
            self._match()
            self._cond.notify_all()
        self._ensure_thread()
        return action

    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._follow, name="humanwire-scripted-human", daemon=True
            )
            self._thread.start()

    def _fetch(
        self, http: httpx.Client, *, after: str | None, wait: float | None
    ) -> list[SandboxDelivery]:
        params: dict[str, str] = {}
        if after is not None:
            params["after"] = after
        if wait is not None:
            params["wait"] = f"{wait:g}"
        response = http.get("/sandbox/messages", params=params)
        if wait is not None and response.status_code == 400:
            # This service has no long-poll: fall back to short polling.
            self._long_poll = False
            response = http.get("/sandbox/messages")
        if not response.is_success:
            raise AssertionError(
                f"scripted human: GET /sandbox/messages answered {response.status_code} "
                f"{response.text}"
            )
        delivered = _deliveries_adapter.validate_json(response.content)
        if delivered:
            self._sandbox_newest = delivered[0].id
        if self._meta is None:
            return delivered
        return sorted(
            [*delivered, *self._meta_deliveries()], key=lambda d: d.created_at, reverse=True
        )

    def _merge(self, newest_first: list[SandboxDelivery]) -> bool:
        """Adds unseen deliveries; caller holds the lock. True when any was new."""
        added = False
        for delivery in reversed(newest_first):
            if delivery.id not in self._known:
                self._known[delivery.id] = delivery
                self._order[delivery.id] = len(self._order)
                added = True
        return added

    def _newest_id(self) -> str | None:
        if not self._order:
            return None
        return max(self._order, key=lambda key: self._order[key])

    def _match(self) -> None:
        """Gives each pending action, in scripting order, its delivery; caller holds the lock."""
        chronological = sorted(
            self._known.values(), key=lambda d: (d.created_at, self._order[d.id])
        )
        for pending in self._pending:
            if pending.matched:
                continue
            for delivery in chronological:
                # An action aimed at an interaction acts on it even when claimed before.
                free = pending.interaction_id is not None or delivery.id not in self._claimed
                if free and pending.accepts(delivery):
                    self._claimed.add(delivery.id)
                    pending.matched = True
                    pending.action.delivery = delivery
                    self._start_worker(pending, delivery)
                    break
        self._pending = [pending for pending in self._pending if not pending.matched]

    def _start_worker(self, pending: _Pending, delivery: SandboxDelivery) -> None:
        worker = threading.Thread(
            target=self._carry_out,
            args=(pending, delivery),
            daemon=True,
            name="humanwire-scripted-human-action",
        )
        self._workers.append(worker)
        worker.start()

    def _carry_out(self, pending: _Pending, delivery: SandboxDelivery) -> None:
        action = pending.action
        try:
            if pending.delay > 0 and self._closed.wait(pending.delay):
                action.error = "the scripted human was closed before acting"
                return
            action.response = pending.perform(delivery)
        except _ActionFailed as failure:
            action.error = failure.message
            action.response = failure.response
        except Exception as exc:
            action.error = f"{type(exc).__name__}: {exc}"
        finally:
            if action.error is not None:
                # Nothing was done with it: a later action may act on it (a corrected
                # form, say).
                with self._cond:
                    self._claimed.discard(delivery.id)
                    self._match()
            action._done.set()

    def _follow(self) -> None:
        """Background thread: follows the account's deliveries while actions are pending."""
        while not self._closed.is_set():
            with self._cond:
                while not self._pending and not self._closed.is_set():
                    self._cond.wait()
                if self._closed.is_set():
                    return
                after = self._sandbox_newest if self._meta is not None else self._newest_id()
            started = time.monotonic()
            try:
                batch = self._fetch(
                    self._poll_http,
                    after=after,
                    wait=self._poll_wait if self._long_poll else None,
                )
            except (httpx.HTTPError, AssertionError) as exc:
                self._poll_error = str(exc)
                self._closed.wait(0.1)
                continue
            with self._cond:
                added = self._merge(batch)
                self._match()
            if not added and time.monotonic() - started < 0.05:
                # The service answered at once (no long-poll): short poll instead.
                self._closed.wait(0.05)

    def _describe_seen(self) -> str:
        try:
            latest = self._fetch(self._http, after=None, wait=None)
        except (httpx.HTTPError, AssertionError):
            latest = []
        with self._cond:
            self._merge(latest)
            seen = sorted(self._known.values(), key=lambda d: (d.created_at, self._order[d.id]))
            claimed = set(self._claimed)
        if not seen:
            lines = ["Nothing was delivered to this account."]
        else:
            lines = ["Deliveries seen on this account (oldest first):"]
            for delivery in seen:
                mark = " [claimed]" if delivery.id in claimed else ""
                lines.append(
                    f"  {delivery.kind} via {delivery.channel} to {delivery.to}: "
                    f"{delivery.text[:80]!r}{mark}"
                )
        if self._poll_error:
            lines.append(f"Last polling error: {self._poll_error}")
        return "\n".join(lines)


class _ActionFailed(Exception):
    def __init__(self, message: str, response: httpx.Response | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.response = response
