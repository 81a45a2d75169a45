"""What the agent framework adapters' test folders share (``tests/openai_agents``,
``tests/pydantic_ai``, ``tests/google_adk``, ``tests/strands``, and the next adapter's):
a clean environment, the README example, import isolation, a second Python process,
webhook deliveries as a receiver gets them, and the checks every tool makes when it is
built.

Each folder's ``conftest.py`` imports the fixtures (``from framework_support import
clean_environment``: imported there, pytest finds them); its tests import the helpers
(``tests/`` is on ``sys.path``: the top ``conftest.py`` lives there). A folder keeps what
is its framework's own (a scripted model, how a run is driven) in ``<prefix>_helpers.py``,
named apart: module basenames must be unique across the test folders.

Framework-neutral: humanwire, pytest and the standard library only (the Strands folder
runs in an environment of its own, ``scripts/test-isolated``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from approval_support import approval_texts, decide_interaction
from docs_support import FRAMEWORK_PAGES, block
from humanwire import AsyncHumanWire, HumanWire
from humanwire.testing import RunningService, ScriptedHuman
from humanwire.testing.receiver import ReceivedDelivery, WebhookReceiver
from humanwire.types import ApprovalDecidedEvent
from humanwire.webhooks import SIGNATURE_HEADER

PHONE = "+12025550100"
"""The inbox's default human (sms, whatsapp, calls)."""
SLACK = "U0HUMAN0001"
"""The inbox's default human on Slack."""
OTHER_PHONE = "+442079460123"
EMAIL = "human@example.com"
"""The inbox's default human by email."""

PAY = ("send_payment", {"amount": 50, "to": "bob"})
"""The tool call the approval tests gate: a payment that must run once at most."""

HUMANWIRE_ENVIRONMENT = (
    "HUMANWIRE_SMS_TO",
    "HUMANWIRE_WHATSAPP_TO",
    "HUMANWIRE_SLACK_TO",
    "HUMANWIRE_EMAIL_TO",
    "HUMANWIRE_PERSON",
    "HUMANWIRE_BASE_URL",
    "HUMANWIRE_API_KEY",
)


# --- fixtures (imported by each folder's conftest) --------------------------------------


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recipients and service come from the fixtures, never from the developer's shell."""
    for name in HUMANWIRE_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def service_environment(
    monkeypatch: pytest.MonkeyPatch, humanwire_service: RunningService, humanwire_api_key: str
) -> Iterator[RunningService]:
    """``HUMANWIRE_BASE_URL`` and ``HUMANWIRE_API_KEY`` naming the loopback service, as a
    README example that builds its clients from the environment reads them."""
    monkeypatch.setenv("HUMANWIRE_BASE_URL", humanwire_service.base_url)
    monkeypatch.setenv("HUMANWIRE_API_KEY", humanwire_api_key)
    yield humanwire_service


@pytest.fixture
def ada(humanwire_service: RunningService, humanwire_api_key: str) -> str:
    """A person of this test's account's directory, Ada, whose one address is the inbox's
    default human's number (sms), confirmed by the code she was sent: the scripted human
    answers her as it answers that number. Her id (``per_…``)."""
    client = HumanWire(api_key=humanwire_api_key, base_url=humanwire_service.base_url)
    with client:
        return confirmed_person(client, "Ada", [("sms", PHONE)])


def confirmed_person(client: HumanWire, name: str, addresses: Sequence[tuple[str, str]]) -> str:
    """A person with these ``(channel, to)`` addresses (sms, whatsapp or email), each
    confirmed by answering the code it was sent through the sandbox; their id."""
    made = client.people.create(
        name=name, addresses=[{"channel": channel, "to": to} for channel, to in addresses]
    )
    for channel, to in addresses:
        sent = client.people.confirm(made.person_id, channel=channel, to=to)
        [delivery] = client.sandbox.deliveries(interaction_id=sent.interaction_id)
        code = re.search(r"\b\d{6}\b", delivery.text)
        assert code is not None and delivery.from_ is not None, delivery
        extra = {"interaction_id": sent.interaction_id} if channel == "email" else {}
        client.sandbox.reply(
            channel=channel, from_=to, to=delivery.from_, body=code.group(0), **extra
        )
    person = client.people.get(made.person_id)
    assert all(address.confirmed for address in person.addresses), person
    return made.person_id


# --- the README -------------------------------------------------------------------------


def readme_example(heading: str) -> str:
    """The first Python block of the README section ``## <heading>``, which the framework's
    page (``FRAMEWORK_PAGES``) shows too, under ``## In ten lines``: the one run checks
    both."""
    code = block("README.md", heading, "python")
    page = FRAMEWORK_PAGES.get(heading)
    if page is not None:
        assert block(page, "In ten lines", "python") == code, f"docs/{page} differs"
    return code


# --- another Python process -------------------------------------------------------------


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter (of this environment)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def modules_loaded_by(imports: str, packages: Sequence[str]) -> list[str]:
    """The modules of ``packages`` (and below them) loaded once a fresh interpreter ran
    ``import <imports>``: what importing humanwire costs an application."""
    done = run_python(
        f"""
        import json, sys
        import {imports}
        packages = {tuple(packages)!r}
        print(json.dumps(sorted(
            m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in packages)
        )))
        """
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def import_error_without(packages: Sequence[str], module: str) -> str:
    """What ``import <module>`` raises in a fresh interpreter where ``packages`` (and
    below them) cannot be found, as when a framework is not installed; ``""`` when the
    import succeeded."""
    done = run_python(
        f"""
        import sys

        class Blocker:
            def find_spec(self, name, path=None, target=None):
                if any(name == p or name.startswith(p + ".") for p in {tuple(packages)!r}):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, Blocker())
        try:
            import {module}
        except ImportError as exc:
            print("IMPORT-ERROR:", exc)
        """
    )
    assert done.returncode == 0, done.stderr
    found = re.search(r"^IMPORT-ERROR: (.*)", done.stdout, re.M | re.S)
    return found.group(1).strip() if found else ""


def run_process(script: Path, *args: str) -> dict[str, Any]:
    """Run ``script`` (one side of a two-process test) with ``args`` in its own
    interpreter, this one's import path included; the JSON object of its last line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(script.parent), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- webhook deliveries -----------------------------------------------------------------


def approved_later(
    human: ScriptedHuman, receiver: WebhookReceiver, interaction_id: str
) -> ApprovalDecidedEvent:
    """The person approves (with a comment, on the approval page) once the pausing
    process is gone; the ``approval.decided`` event the receiver got for it (the only
    one)."""
    decide_interaction(human, interaction_id, "approve", "Go")
    (event,) = receiver.wait_for("approval.decided", timeout=10)
    assert isinstance(event, ApprovalDecidedEvent)
    return event


def signed(delivery: ReceivedDelivery) -> dict[str, str]:
    """The delivery's signature header, as a receiver hands it on."""
    return {SIGNATURE_HEADER: delivery.headers[SIGNATURE_HEADER.lower()]}


def delivery_files(receiver: WebhookReceiver, directory: Path) -> tuple[str, str, str]:
    """The receiver's one delivery as another process is handed it: the file holding its
    raw body, its signature, and the secret to verify it with."""
    [delivery] = receiver.deliveries
    body = directory / "event.json"
    body.write_bytes(delivery.body)
    secret = receiver.secret
    assert secret is not None
    return str(body), delivery.headers[SIGNATURE_HEADER.lower()], secret


async def deliveries_of(
    receiver: WebhookReceiver, event_type: str, count: int = 1
) -> list[ReceivedDelivery]:
    """The deliveries of ``event_type``, once at least ``count`` have arrived."""
    await receiver.async_wait_for(event_type, count=count, timeout=10)
    return [d for d in receiver.deliveries if d.event and d.event.event_type == event_type]


async def decided(client: AsyncHumanWire, interaction_id: str) -> ApprovalDecidedEvent:
    """The ``approval.decided`` event of a decided approval, as its webhook carries it."""
    approval = await client.approvals.wait(interaction_id, timeout=10)
    assert approval.status == "ended"
    return ApprovalDecidedEvent(payload=approval)


def approval_decided(
    interaction_id: str, metadata: Mapping[str, str], decision: str = "approved"
) -> dict[str, Any]:
    """An ``approval.decided`` delivery's body (approved unless ``decision`` says
    otherwise), as a receiver could be sent it: forged, for another framework, or for
    another call."""
    return {
        "eventType": "approval.decided",
        "payload": {
            "interactionId": interaction_id,
            "status": "ended",
            "decision": decision,
            "metadata": dict(metadata),
        },
    }


def forms(human: ScriptedHuman) -> list[Any]:
    """The approval requests' texts sent to the scripted human so far (the name is
    older than approval requests)."""
    return approval_texts(human)


# --- the tools --------------------------------------------------------------------------


def remote_client() -> HumanWire:
    """A client of a remote service: nothing is sent, no embedded service starts, no
    default human."""
    return HumanWire(api_key="hw_test", base_url="https://humanwire.example.com")


def assert_checked_when_built(tools: ModuleType) -> None:
    """What every adapter's tools refuse when built (``tools``: the adapter's package),
    before anything is sent: a window out of range, no recipient, half a fixed form, a
    WhatsApp sender, a channel card without an id."""
    remote, to = remote_client(), {"to": "+14155550123"}
    with pytest.raises(ValueError, match="wait_time must be from 1 to 600"):
        tools.AskHumanSMS(client=remote, **to, wait_time=900)
    with pytest.raises(ValueError, match="HUMANWIRE_SMS_TO"):
        tools.AskHumanSMS(client=remote)
    with pytest.raises(ValueError, match="both title and fields"):
        tools.HumanForm(client=remote, **to, title="Only a title")
    with pytest.raises(ValueError, match="from_"):
        tools.AskHumanWhatsApp(client=remote, **to, from_="+14155550100")
    with pytest.raises(ValueError, match="channel_id"):
        tools.AskHumanChannel("", client=remote)
    assert_person_checked_when_built(tools)


def assert_person_checked_when_built(tools: ModuleType) -> None:
    """A tool takes ``to`` or, in its place, ``person`` (``per_…``): both at once, a
    person that is not an id, or a person tool with no person (nor ``HUMANWIRE_PERSON``)
    or given a ``to``, are refused when built, before anything is sent."""
    remote, to, person = remote_client(), "+14155550123", "per_ada"
    with pytest.raises(ValueError, match="to or person, not both"):
        tools.AskHumanSMS(client=remote, to=to, person=person)
    with pytest.raises(ValueError, match="to or person, not both"):
        tools.NotifyHumanSlack(client=remote, to="U0HUMAN0001", person=person)
    with pytest.raises(ValueError, match="to or person, not both"):
        tools.HumanForm(client=remote, to=to, person=person)
    with pytest.raises(ValueError, match="person's id"):
        tools.AskHumanEmail(client=remote, person="ada@example.com")
    with pytest.raises(ValueError, match="HUMANWIRE_PERSON"):
        tools.AskHumanPerson(client=remote)
    with pytest.raises(ValueError, match="not to"):
        tools.NotifyHumanPerson(client=remote, person=person, to=to)
    with pytest.raises(ValueError, match="fallback_after"):
        tools.AskHumanPerson(client=remote, person=person, fallback_after=0)


def assert_default_human_on_loopback(tools: ModuleType) -> None:
    """On a loopback service (embedded), a tool without ``to`` asks the inbox's human."""
    local = HumanWire(api_key="k", base_url="http://127.0.0.1:9")
    assert tools.AskHumanSMS(client=local).to == PHONE
    assert tools.AskHumanSlack(client=local).to == SLACK
    assert tools.AskHumanEmail(client=local).to == EMAIL


FORM_FIELDS = [
    {
        "id": "size",
        "label": "Size",
        "type": "select",
        "options": [{"label": "S", "value": "s"}, {"label": "L", "value": "l"}],
    }
]

LANGCHAIN_CASES: list[tuple[str, dict[str, Any]]] = [
    ("AskHumanSMS", {"to": PHONE}),
    ("AskHumanSMS", {"to": PHONE, "expose_recipient": True, "wait_time": 60}),
    ("AskHumanWhatsApp", {"to": PHONE}),
    ("AskHumanSlack", {"to": SLACK, "expose_recipient": True}),
    ("NotifyHumanSMS", {"to": PHONE}),
    ("NotifyHumanWhatsApp", {"to": PHONE}),
    ("NotifyHumanSlack", {"to": SLACK}),
    ("AskHumanEmail", {"to": EMAIL, "expose_recipient": True}),
    ("NotifyHumanEmail", {"to": EMAIL}),
    ("AskHumanTelegram", {"to": "123456789", "expose_recipient": True}),
    ("NotifyHumanTelegram", {"to": "123456789"}),
    ("HumanForm", {"to": "123456789", "channel": "telegram"}),
    ("AskHumanTeams", {"to": "29:1a2b3c", "expose_recipient": True}),
    ("NotifyHumanTeams", {"to": "29:1a2b3c"}),
    ("HumanForm", {"to": "29:1a2b3c", "channel": "teams"}),
    ("AskHumanDiscord", {"to": "80351110224678912", "expose_recipient": True}),
    ("NotifyHumanDiscord", {"to": "80351110224678912"}),
    ("HumanForm", {"to": "80351110224678912", "channel": "discord"}),
    ("AskHumanChannel", {"channel_id": "ch_1"}),
    ("HumanForm", {"to": PHONE}),
    ("HumanForm", {"to": PHONE, "channel": "whatsapp", "expose_recipient": True}),
    (
        "HumanForm",
        {
            "to": PHONE,
            "title": "Order",
            "fields": FORM_FIELDS,
            "wait_time": None,
            "follow_up_time": 600,
        },
    ),
    ("AskHumanSMS", {"person": "per_ada"}),
    ("AskHumanPerson", {"person": "per_ada"}),
    ("AskHumanPerson", {"person": "per_ada", "expose_recipient": True, "fallback_after": 120}),
    ("NotifyHumanPerson", {"person": "per_ada"}),
    ("HumanForm", {"person": "per_ada", "channel": "email"}),
    ("CallHuman", {"to": PHONE}),
    ("CallHuman", {"to": PHONE, "expose_recipient": True, "wait_for_call_end": False}),
    ("CheckHumanInteraction", {}),
]
"""A tool class (by name) and its options: built alike in an adapter and in LangChain, the
two must read the same (name, description, argument schema)."""


def check_tools_follow_the_table(adapter: ModuleType) -> None:
    """``adapter`` (an agent framework adapter built on ``humanwire._tool_kinds``) exports
    one class per row of the tool table, each its row's kind joined to the adapter's base,
    named as the row says and documented by the kind."""
    from humanwire._tool_kinds import TOOL_TABLE

    exported = set(adapter.__all__)
    for row in TOOL_TABLE:
        tool_class = getattr(adapter, row.class_name)
        assert row.class_name in exported
        assert issubclass(tool_class, row.kind) and issubclass(tool_class, adapter.HumanWireTool)
        assert tool_class.__doc__ == row.kind.__doc__
    sms = adapter.AskHumanSMS(to=PHONE)
    assert (getattr(sms, "name", None) or sms.tool_name) == "ask_human_sms"  # Strands: tool_name
    person = adapter.AskHumanPerson(person="per_ada")
    assert (getattr(person, "name", None) or person.tool_name) == "ask_human_person"
    assert isinstance(adapter.NotifyHumanPerson(person="per_ada"), adapter.AskHumanPerson)
    assert isinstance(adapter.NotifyHumanSMS(to=PHONE), adapter.AskHumanSMS)


def pinging_kind() -> Any:
    """A kind of tool that is in no adapter, for a test to add to the tool table
    (``ToolRow("PingHuman", kind, "ping_human", "sms", False)``): the rule is that a
    table row is the whole of a new tool, each adapter deriving its tool from the kind
    (at most a line of its own). It texts ``ping: <message>`` by SMS without waiting."""
    from pydantic import BaseModel, Field

    from humanwire._tool_kinds import ToolCore
    from humanwire._tooling import Operation
    from humanwire.approval import resolve_recipient

    class PingInput(BaseModel):
        message: str = Field(min_length=1, description="What to ping the person with.")

    class PingHuman(ToolCore):
        """Ping a person by SMS without waiting (``ping_human``): a tool added at test
        time."""

        args_model = PingInput

        def __init__(
            self,
            *,
            client: Any = None,
            async_client: Any = None,
            to: str | None = None,
            name: str = "ping_human",
            description: str = "Ping a person by SMS. Nothing is awaited.",
            **options: Any,
        ) -> None:
            self.to = resolve_recipient("sms", to, client or async_client)
            super().__init__(
                name=name,
                description=description,
                args_model=PingInput,
                client=client,
                async_client=async_client,
                **options,
            )

        def _operation(self, arguments: BaseModel) -> Operation[Any, str]:
            message, to, metadata = f"ping: {arguments.message}", self.to, self._metadata()  # type: ignore[attr-defined]
            return Operation(
                lambda client: client.messages.sms(to=to, message=message, **metadata),
                lambda response: f"pinged ({response.interaction_id})",
            )

    return PingHuman


def table_with(kind: Any, name: str, channel: str | None) -> tuple[Any, ...]:
    """The tool table with a row for ``kind`` added at its end (a tool that waits for
    nothing)."""
    from humanwire._tool_kinds import TOOL_TABLE, ToolRow

    return (*TOOL_TABLE, ToolRow(kind.__name__, kind, name, channel, False))
