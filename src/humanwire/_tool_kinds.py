"""The humanwire tools once, for every adapter: the frameworks whose tools are objects
built from a name, a description and an argument schema (LangChain, the OpenAI Agents
SDK, Pydantic AI, Google ADK, Strands, CrewAI) join a kind to their tool class; the MCP
server and LlamaIndex's tool spec build each row's kind without a framework
(:func:`bare`) and need no line per tool.

Each class here is one kind of tool without its framework: its options (checked when the
tool is built), its name, description and argument model (the shared ones of
``humanwire._tooling`` / ``humanwire._tool_schemas``), and the client call a validated
call makes (an :class:`~humanwire._tooling.Operation`). An adapter mixes a kind with its
own base, which joins the framework: ``class AskHumanSMS(kinds.AskHumanSMS,
HumanWireTool)``. The kinds come first in the MRO, :class:`ToolCore` right before the
framework's tool class, so a kind's constructor reaches the adapter's base with the name,
description and argument model it settled on, and the adapter's base passes its own
options on to the framework.

:data:`TOOL_TABLE` is the one table of the tools: a row per tool (the class name users
import, the name a model calls, its channel, whether it waits, and the kind that settles
its description, argument schema, defaults and client call). Every adapter derives its
tools from it, one line a tool (``class AskHumanSMS(kinds.AskHumanSMS, HumanWireTool):
...``, the docstring the kind's) or none (MCP, LlamaIndex), and a test holds each adapter
to the table: adding a tool or a channel is a kind and a row here, and at most one line in
each adapter.

An adapter's base runs a call with :meth:`ToolCore.arun` (validate, send, the text for
the model), or in two steps when its framework tells the two failures apart:
:meth:`ToolCore.operation_for` (arguments that do not fit, a form the model designed
badly) and the :class:`~humanwire._tooling.Operation` it returns, run on
``await tool.clients.get()`` (the service refused or could not be reached).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import BaseModel, ValidationError

from humanwire._tool_clients import ToolClients
from humanwire._tool_schemas import (
    CallInput,
    CallWithRecipientInput,
    CheckInteractionInput,
    MessageInput,
    form_input_schema,
    message_input_schema,
    person_input_schema,
)
from humanwire._tooling import (
    ASK_CHANNEL_DESCRIPTION,
    CHANNEL_NAMES,
    CHECK_DESCRIPTION,
    MessageChannel,
    Operation,
    ask_description,
    call_description,
    call_text,
    describe_status,
    form_description,
    form_fields_from_specs,
    form_text,
    message_text,
    notify_description,
    notify_person_description,
    person_description,
    person_sent_text,
    sent_text,
    with_link,
)
from humanwire.approval import check_follow_up_time, check_wait_time, resolve_recipient
from humanwire.types import CallRequest, FormField, FormResponse, MessageResponse, Voice
from humanwire.types.people import PERSON_ID

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = [
    "DEFAULT_WAIT_TIME",
    "LISTING_PERSON",
    "LISTING_TO",
    "PERSON_ENV",
    "TOOL_CLASS_NAMES",
    "TOOL_TABLE",
    "AskHumanChannel",
    "AskHumanDiscord",
    "AskHumanEmail",
    "AskHumanPerson",
    "AskHumanSMS",
    "AskHumanSlack",
    "AskHumanTeams",
    "AskHumanTelegram",
    "AskHumanWhatsApp",
    "BareTool",
    "CallHuman",
    "CheckHumanInteraction",
    "HumanForm",
    "MessageTool",
    "ModelToolCore",
    "NotifyHumanDiscord",
    "NotifyHumanEmail",
    "NotifyHumanPerson",
    "NotifyHumanSMS",
    "NotifyHumanSlack",
    "NotifyHumanTeams",
    "NotifyHumanTelegram",
    "NotifyHumanWhatsApp",
    "PersonTool",
    "ToolCore",
    "ToolRow",
    "bare",
    "check_person",
    "error_text",
    "form_description_text",
    "recipient_channel",
    "takes",
]

DEFAULT_WAIT_TIME = 300.0
"""How long a tool holds the request for the human's answer unless told otherwise."""

_UNSET: Any = object()


def error_text(error: Exception) -> str:
    """What the model reads when a call failed: the service's reason (a bad number, an
    unknown interaction, a form the service refuses), or which arguments do not fit, each
    field named (worded as the MCP server words it). These reasons are written for a
    model and carry no secret."""
    if isinstance(error, ValidationError):
        problems = []
        for problem in error.errors(include_url=False):
            where = ".".join(str(part) for part in problem["loc"])
            problems.append(f"{where}: {problem['msg']}" if where else problem["msg"])
        return "humanwire: invalid arguments: " + "; ".join(problems)
    return f"humanwire: {error}"


class ToolCore:
    """What every humanwire tool holds whatever its framework: the argument model, its
    clients (:class:`~humanwire._tool_clients.ToolClients`: ``client`` may be a
    ``HumanWire`` or an ``AsyncHumanWire``, ``async_client`` an ``AsyncHumanWire``; left
    out, one from the environment on first use, per event loop) and every send's
    ``metadata`` (``send_metadata``; not a framework's own tool metadata). The remaining
    keyword arguments go to the next class in the MRO: the framework's tool class."""

    args_model: type[BaseModel]
    clients: ToolClients
    send_metadata: dict[str, str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # An adapter's tool is one line (its kind joined to the framework's base): it
        # reads the kind's docstring, written once.
        if cls.__dict__.get("__doc__") is None:
            cls.__doc__ = next((base.__doc__ for base in cls.__mro__[1:] if base.__doc__), None)

    def __init__(
        self,
        *,
        args_model: type[BaseModel],
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        metadata: Mapping[str, str] | None = None,
        **options: Any,
    ) -> None:
        self.args_model = args_model
        self.clients = ToolClients(client, async_client)
        self.send_metadata = dict(metadata or {})
        # The framework's tool class (after this one in the MRO) takes the rest.
        cast(Any, super()).__init__(**options)

    def __repr__(self) -> str:
        name = getattr(self, "name", None) or getattr(self, "tool_name", None)
        return f"{type(self).__name__}(name={name!r})"

    def _metadata(self) -> dict[str, Any]:
        return {"metadata": dict(self.send_metadata)} if self.send_metadata else {}

    def _operation(self, arguments: BaseModel) -> Operation[Any, str]:
        """The client call for validated ``arguments`` and how its response becomes the
        text the model reads."""
        raise NotImplementedError

    def operation_for(self, arguments: Mapping[str, Any] | str | None) -> Operation[Any, str]:
        """Validate ``arguments`` (a dict, or JSON text) and build the client call. Raises
        ``ValidationError``, or ``HumanWireError`` for a request refused before anything
        is sent (a form the model designed badly): both are the model's to fix."""
        if isinstance(arguments, str) or arguments is None:
            parsed = self.args_model.model_validate_json(arguments or "{}")
        else:
            parsed = self.args_model.model_validate(dict(arguments))
        return self._operation(parsed)

    async def arun(self, arguments: Mapping[str, Any] | str | None) -> str:
        """Validate ``arguments`` and make the call on this event loop's async client.
        Raises ``ValidationError`` or ``HumanWireError``; a human who does not answer is
        a normal result (the no-response text)."""
        operation = self.operation_for(arguments)
        return await operation.arun(await self.clients.get())


class ModelToolCore(ToolCore):
    """:class:`ToolCore` for a framework whose tool is a pydantic model (LangChain's and
    CrewAI's ``BaseTool``): the kind's settings (recipient, windows, form...) are plain
    attributes beside the model's fields, so the model's own fields, dump and validation
    stay the framework's."""

    def __init__(self, **options: Any) -> None:
        # The kind (and ToolCore) set their attributes before the model exists, and
        # pydantic's __init__ replaces the instance dict: carry them across it.
        settings = self.__dict__
        super().__init__(**options)
        for key, value in settings.items():
            self.__dict__.setdefault(key, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in getattr(type(self), "model_fields", {}) or name.startswith("_"):
            super().__setattr__(name, value)
        else:  # a kind's setting: a plain attribute, not a pydantic field
            object.__setattr__(self, name, value)


def _windows(wait_time: float | None, follow_up_time: float | None) -> dict[str, float]:
    windows: dict[str, float] = {}
    if wait_time is not None:
        windows["wait_time"] = wait_time
    if follow_up_time is not None:
        windows["follow_up_time"] = follow_up_time
    return windows


PERSON_ENV = "HUMANWIRE_PERSON"
"""The default person of the person tools (``per_…``) when built without ``person``."""


def check_person(person: object, *, name: str = "person") -> str:
    """A person's id of the people directory (``per_…``); ``ValueError`` otherwise."""
    if not isinstance(person, str) or not PERSON_ID.fullmatch(person):
        raise ValueError(
            f"{name} must be a person's id from the people directory (per_…), got {person!r}"
        )
    return person


def _recipient_or_person(
    channel: str, to: str | None, person: str | None, client: object | None
) -> tuple[str | None, str | None]:
    """A tool's recipient: ``to`` (else the channel's variable, else the default human) or,
    in its place, ``person``, asked on their first confirmed address on the channel; never
    both."""
    if person is not None:
        if to:
            raise ValueError(
                "give to or person, not both: person='per_…' asks that person of the people "
                "directory in to's place"
            )
        return None, check_person(person)
    return resolve_recipient(channel, to, client), None


def _recipient_kwargs(tool: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    """Where a message or form goes: the model's ``to`` (when exposed and given), else
    the tool's ``person``, else its ``to``."""
    to = given.get("to")
    if tool.expose_recipient and to:
        return {"to": to}
    if tool.person is not None:
        return {"person": tool.person}
    return {"to": tool.to}


# --- messages ---------------------------------------------------------------------------


class MessageTool(ToolCore):
    """Send a text to one person over a channel; wait for the reply unless ``wait_time``
    is ``None`` (then only the interaction id comes back). ``from_`` chooses the sender:
    an sms number of the account, or the slack workspace id (a WhatsApp message goes from
    the account's number, an email from the service's sender). ``person="per_…"`` in
    place of ``to`` asks a person of the people directory on their first confirmed
    address on the channel (exactly one of the two)."""

    channel: ClassVar[MessageChannel]
    default_name: ClassVar[str]
    default_wait_time: ClassVar[float | None] = DEFAULT_WAIT_TIME

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        to: str | None = None,
        person: str | None = None,
        wait_time: float | None = _UNSET,
        follow_up_time: float | None = None,
        from_: str | None = None,
        expose_recipient: bool = False,
        name: str | None = None,
        description: str | None = None,
        **options: Any,
    ) -> None:
        if from_ is not None and self.channel == "whatsapp":
            raise ValueError("a WhatsApp message goes from the account's number: no from_")
        if from_ is not None and self.channel == "email":
            raise ValueError("an email goes from the service's configured sender: no from_")
        if from_ is not None and self.channel == "telegram":
            raise ValueError("a Telegram message goes from the service's bot: no from_")
        if from_ is not None and self.channel == "teams":
            raise ValueError("a Teams message goes from the service's bot: no from_")
        if from_ is not None and self.channel == "discord":
            raise ValueError("a Discord message goes from the service's bot: no from_")
        if wait_time is _UNSET:
            wait_time = self.default_wait_time
        self.wait_time = check_wait_time(wait_time)
        self.follow_up_time = check_follow_up_time(follow_up_time)
        self.from_ = from_
        self.expose_recipient = expose_recipient
        self.to, self.person = _recipient_or_person(
            self.channel, to, person, client or async_client
        )
        waits = self.wait_time is not None
        if description is None:
            description = (
                ask_description(self.channel, self.wait_time)
                if self.wait_time is not None
                else notify_description(self.channel)
            )
        super().__init__(
            name=name or self.default_name,
            description=description,
            args_model=message_input_schema(
                note=not waits, channel=self.channel, expose_recipient=expose_recipient
            ),
            client=client,
            async_client=async_client,
            **options,
        )

    def _request(self, arguments: BaseModel) -> dict[str, Any]:
        given = dict(arguments)  # the schema varies: "to" only when exposed
        kwargs: dict[str, Any] = {
            **_recipient_kwargs(self, given),
            "message": given["message"],
            **_windows(self.wait_time, self.follow_up_time),
            **self._metadata(),
        }
        if self.from_ is not None:
            kwargs["from_"] = self.from_
        return kwargs

    def _finish(self, response: MessageResponse) -> str:
        if self.wait_time is None:
            return sent_text(response, self.channel)
        return message_text(response)

    def _operation(self, arguments: BaseModel) -> Operation[MessageResponse, str]:
        kwargs = self._request(arguments)
        return Operation(
            lambda client: getattr(client.messages, self.channel)(**kwargs), self._finish
        )


class AskHumanSMS(MessageTool):
    """Text a person by SMS and wait for the reply (``ask_human_sms``)."""

    channel: ClassVar[MessageChannel] = "sms"
    default_name: ClassVar[str] = "ask_human_sms"


class AskHumanWhatsApp(MessageTool):
    """Message a person on WhatsApp and wait for the reply (``ask_human_whatsapp``)."""

    channel: ClassVar[MessageChannel] = "whatsapp"
    default_name: ClassVar[str] = "ask_human_whatsapp"


class AskHumanSlack(MessageTool):
    """Message a person or channel on Slack and wait for a reply in the thread
    (``ask_human_slack``)."""

    channel: ClassVar[MessageChannel] = "slack"
    default_name: ClassVar[str] = "ask_human_slack"


class AskHumanTelegram(MessageTool):
    """Message a person on Telegram from the bot and wait for their reply in the chat
    (``ask_human_telegram``)."""

    channel: ClassVar[MessageChannel] = "telegram"
    default_name: ClassVar[str] = "ask_human_telegram"


class AskHumanTeams(MessageTool):
    """Message a person on Microsoft Teams from the bot and wait for their next message in
    their chat with it (``ask_human_teams``)."""

    channel: ClassVar[MessageChannel] = "teams"
    default_name: ClassVar[str] = "ask_human_teams"


class AskHumanDiscord(MessageTool):
    """Message a person (a DM) or a channel on Discord from the bot and wait for the text
    typed through the message's Reply button (``ask_human_discord``)."""

    channel: ClassVar[MessageChannel] = "discord"
    default_name: ClassVar[str] = "ask_human_discord"


class AskHumanEmail(MessageTool):
    """Email a person and wait for their reply to it (``ask_human_email``)."""

    channel: ClassVar[MessageChannel] = "email"
    default_name: ClassVar[str] = "ask_human_email"


class NotifyHumanSMS(AskHumanSMS):
    """Send an SMS without waiting (``notify_human_sms``)."""

    default_name: ClassVar[str] = "notify_human_sms"
    default_wait_time: ClassVar[float | None] = None


class NotifyHumanWhatsApp(AskHumanWhatsApp):
    """Send a WhatsApp message without waiting (``notify_human_whatsapp``)."""

    default_name: ClassVar[str] = "notify_human_whatsapp"
    default_wait_time: ClassVar[float | None] = None


class NotifyHumanSlack(AskHumanSlack):
    """Send a Slack message without waiting (``notify_human_slack``)."""

    default_name: ClassVar[str] = "notify_human_slack"
    default_wait_time: ClassVar[float | None] = None


class NotifyHumanTelegram(AskHumanTelegram):
    """Send a Telegram message without waiting (``notify_human_telegram``)."""

    default_name: ClassVar[str] = "notify_human_telegram"
    default_wait_time: ClassVar[float | None] = None


class NotifyHumanTeams(AskHumanTeams):
    """Send a Microsoft Teams message without waiting (``notify_human_teams``)."""

    default_name: ClassVar[str] = "notify_human_teams"
    default_wait_time: ClassVar[float | None] = None


class NotifyHumanDiscord(AskHumanDiscord):
    """Send a Discord message without waiting (``notify_human_discord``)."""

    default_name: ClassVar[str] = "notify_human_discord"
    default_wait_time: ClassVar[float | None] = None


class NotifyHumanEmail(AskHumanEmail):
    """Send an email without waiting (``notify_human_email``)."""

    default_name: ClassVar[str] = "notify_human_email"
    default_wait_time: ClassVar[float | None] = None


# --- a person, wherever they are ---------------------------------------------------------


def check_fallback_after(value: float | None) -> float | None:
    """``None`` or seconds from 1 to 60600 (the service's ``fallbackAfter``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("fallback_after must be a number of seconds from 1 to 60600")
    if not 1 <= value <= 60600:
        raise ValueError(f"fallback_after must be from 1 to 60600 seconds, got {value:g}")
    return value


class PersonTool(ToolCore):
    """Send a text to a person of the people directory wherever they are
    (``POST /messages/person``): on the first of their confirmed addresses in their
    order, whatever its channel; wait for the reply unless ``wait_time`` is ``None``.
    ``person`` is their id (``per_…``), else ``HUMANWIRE_PERSON``; ``fallback_after``
    (seconds) moves the message on to their next confirmed address when nobody answered
    by then, address by address while the window lasts. With ``expose_recipient`` the
    model may name another person by id."""

    default_name: ClassVar[str]
    default_wait_time: ClassVar[float | None] = DEFAULT_WAIT_TIME

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        person: str | None = None,
        wait_time: float | None = _UNSET,
        follow_up_time: float | None = None,
        fallback_after: float | None = None,
        expose_recipient: bool = False,
        name: str | None = None,
        description: str | None = None,
        **options: Any,
    ) -> None:
        if "to" in options:
            raise ValueError(
                f"{type(self).__name__} asks a person of the people directory: give "
                "person='per_…', not to (an address is a channel tool's: AskHumanSMS, …)"
            )
        if wait_time is _UNSET:
            wait_time = self.default_wait_time
        self.wait_time = check_wait_time(wait_time)
        self.follow_up_time = check_follow_up_time(follow_up_time)
        self.fallback_after = check_fallback_after(fallback_after)
        if person is None:
            person = os.environ.get(PERSON_ENV, "").strip() or None
        if person is None:
            raise ValueError(
                f"no person: pass person='per_…' (a person of the people directory) or set "
                f"{PERSON_ENV}"
            )
        self.person = check_person(person)
        self.expose_recipient = expose_recipient
        waits = self.wait_time is not None
        if description is None:
            description = (
                person_description(self.wait_time, self.fallback_after)
                if self.wait_time is not None
                else notify_person_description(self.fallback_after)
            )
        super().__init__(
            name=name or self.default_name,
            description=description,
            args_model=person_input_schema(note=not waits, expose_recipient=expose_recipient),
            client=client,
            async_client=async_client,
            **options,
        )

    def _request(self, arguments: BaseModel) -> dict[str, Any]:
        given = dict(arguments)  # the schema varies: "person" only when exposed
        chosen = given.get("person")
        kwargs: dict[str, Any] = {
            "message": given["message"],
            **_windows(self.wait_time, self.follow_up_time),
            **self._metadata(),
        }
        if self.fallback_after is not None:
            kwargs["fallback_after"] = self.fallback_after
        return {"person": chosen if self.expose_recipient and chosen else self.person, **kwargs}

    def _finish(self, response: MessageResponse) -> str:
        if self.wait_time is None:
            return person_sent_text(response)
        return message_text(response)

    def _operation(self, arguments: BaseModel) -> Operation[MessageResponse, str]:
        kwargs = self._request(arguments)
        person = kwargs.pop("person")
        return Operation(lambda client: client.messages.person(person, **kwargs), self._finish)


class AskHumanPerson(PersonTool):
    """Ask a person of the people directory wherever they answer and wait for the reply
    (``ask_human_person``): on their first confirmed address, whatever its channel, and
    with ``fallback_after`` on their next ones too."""

    default_name: ClassVar[str] = "ask_human_person"


class NotifyHumanPerson(AskHumanPerson):
    """Send a person of the people directory a message on their first confirmed address,
    whatever its channel, without waiting (``notify_human_person``)."""

    default_name: ClassVar[str] = "notify_human_person"
    default_wait_time: ClassVar[float | None] = None


class AskHumanChannel(ToolCore):
    """Send through a channel card (``ask_human_channel``): the card holds the recipient,
    windows and templates, so the no-response text is the card's."""

    def __init__(
        self,
        channel_id: str,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        name: str = "ask_human_channel",
        description: str = ASK_CHANNEL_DESCRIPTION,
        **options: Any,
    ) -> None:
        if not channel_id:
            raise ValueError("channel_id is required: the id of a channel card")
        self.channel_id = channel_id
        super().__init__(
            name=name, description=description, args_model=MessageInput, client=client, **options
        )

    def _operation(self, arguments: BaseModel) -> Operation[MessageResponse, str]:
        message, metadata = cast(MessageInput, arguments).message, self._metadata()
        return Operation(
            lambda client: client.messages.channel(self.channel_id, message=message, **metadata),
            message_text,
        )


# --- forms ------------------------------------------------------------------------------


class HumanForm(ToolCore):
    """Send a form link and wait for the submitted values (``human_form``).

    Fixed mode: give ``title`` and ``fields`` and the model only supplies an optional link
    message. Dynamic mode: leave them out and the model designs the form (title, fields
    with types, options, required) through a flat schema. ``form_description`` is the
    fixed form's subtitle (``description`` is the tool's own, read by the model).
    ``person="per_…"`` in place of ``to`` sends it to a person of the people directory, on
    their first confirmed address on ``channel``.
    """

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        channel: MessageChannel = "sms",
        to: str | None = None,
        person: str | None = None,
        expose_recipient: bool = False,
        title: str | None = None,
        fields: Sequence[FormField | Mapping[str, Any]] | None = None,
        form_description: str | None = None,
        submit_label: str | None = None,
        brand_image_url: str | None = None,
        message: str | None = None,
        wait_time: float | None = DEFAULT_WAIT_TIME,
        follow_up_time: float | None = None,
        name: str = "human_form",
        description: str | None = None,
        **options: Any,
    ) -> None:
        if channel not in CHANNEL_NAMES:
            raise ValueError(
                "channel must be sms, whatsapp, slack, email, telegram, teams or discord"
            )
        if (title is None) != (fields is None):
            raise ValueError("a fixed form needs both title and fields (or neither: dynamic)")
        if fields is not None and not fields:
            raise ValueError("fields: a form needs at least one field")
        self.wait_time = check_wait_time(wait_time)
        self.follow_up_time = check_follow_up_time(follow_up_time)
        if self.wait_time is None and self.follow_up_time is None:
            raise ValueError("a form needs wait_time, follow_up_time or both")
        self.channel: MessageChannel = channel
        self.to, self.person = _recipient_or_person(channel, to, person, client or async_client)
        self.expose_recipient = expose_recipient
        self.title = title
        self.fields = (
            None
            if fields is None
            else [
                f if isinstance(f, FormField) else FormField.model_validate(dict(f)) for f in fields
            ]
        )
        self.form_description = form_description
        self.submit_label = submit_label
        self.brand_image_url = brand_image_url
        self.message = message
        if description is None:
            labels = None if self.fields is None else [field.label for field in self.fields]
            description = form_description_text(channel, self.wait_time, title, labels)
        super().__init__(
            name=name,
            description=description,
            args_model=form_input_schema(
                dynamic=self.dynamic, channel=channel, expose_recipient=expose_recipient
            ),
            client=client,
            async_client=async_client,
            **options,
        )

    @property
    def dynamic(self) -> bool:
        return self.fields is None

    def _request(self, arguments: BaseModel) -> dict[str, Any]:
        given = dict(arguments)  # the schema varies with the mode, channel and recipient
        if self.dynamic:
            # The model's design: an InvalidRequestError tells it what to fix.
            form_fields = form_fields_from_specs(list(given.get("fields") or []))
            title, subtitle = given["title"], given.get("description")
        else:
            form_fields, title = list(self.fields or []), self.title
            subtitle = self.form_description
        kwargs: dict[str, Any] = {
            **_recipient_kwargs(self, given),
            "title": title,
            "fields": form_fields,
            **_windows(self.wait_time, self.follow_up_time),
            **self._metadata(),
        }
        optional = {
            "description": subtitle,
            "submit_label": self.submit_label,
            "brand_image_url": self.brand_image_url,
        }
        if self.channel != "whatsapp":
            optional["message"] = with_link(given.get("message") or self.message)
        kwargs.update({key: value for key, value in optional.items() if value is not None})
        return kwargs

    @staticmethod
    def _finish(response: FormResponse) -> str:
        return form_text(response, submitted_prefix="The human submitted the form:\n")

    def _operation(self, arguments: BaseModel) -> Operation[FormResponse, str]:
        kwargs = self._request(arguments)
        return Operation(lambda client: getattr(client.forms, self.channel)(**kwargs), self._finish)


def form_description_text(
    channel: str, wait_time: float | None, title: str | None, labels: list[str] | None
) -> str:
    """The form tool's description: model-designed, or the fixed form with its labels."""
    if title is None:
        return form_description(channel, wait_time)
    return form_description(channel, wait_time, title=title, labels=labels)


# --- calls ------------------------------------------------------------------------------


class CallHuman(ToolCore):
    """Place a voice call driven by a prompt and return its summary (``call_human``).

    The recipient is a phone number: ``to``, else ``HUMANWIRE_SMS_TO``, else (embedded
    service) the inbox's default human. ``transfer_to``, ``language``, ``voice`` and
    ``wait_for_call_end`` are fixed at construction.
    """

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        to: str | None = None,
        expose_recipient: bool = False,
        transfer_to: str | None = None,
        language: str = "en-US",
        voice: Voice = "female",
        wait_for_call_end: bool = True,
        name: str = "call_human",
        description: str | None = None,
        **options: Any,
    ) -> None:
        self.to = resolve_recipient("sms", to, client or async_client)
        # The wire model checks the numbers, language and voice now, not at the first call.
        CallRequest(
            prompt="check", to=self.to, transfer_to=transfer_to, language=language, voice=voice
        )
        self.expose_recipient = expose_recipient
        self.transfer_to = transfer_to
        self.language = language
        self.voice: Voice = voice
        self.wait_for_call_end = wait_for_call_end
        super().__init__(
            name=name,
            description=description or call_description(wait_for_call_end),
            args_model=CallWithRecipientInput if expose_recipient else CallInput,
            client=client,
            async_client=async_client,
            **options,
        )

    def _operation(self, arguments: BaseModel) -> Operation[Any, str]:
        given = dict(arguments)
        to = given.get("to")
        kwargs: dict[str, Any] = {
            "to": to if self.expose_recipient and to else self.to,
            "prompt": given["prompt"],
            "language": self.language,
            "voice": self.voice,
            "wait_for_call_end": self.wait_for_call_end,
            **self._metadata(),
        }
        if self.transfer_to is not None:
            kwargs["transfer_to"] = self.transfer_to
        return Operation(lambda client: client.calls.create(**kwargs), call_text)


# --- interactions -----------------------------------------------------------------------


class CheckHumanInteraction(ToolCore):
    """The status and result of an earlier interaction, a late reply included
    (``check_human_interaction``). ``wait`` holds the check up to that many seconds for a
    change (the service's ``?wait=``, at most 60)."""

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        wait: float = 0,
        name: str = "check_human_interaction",
        description: str = CHECK_DESCRIPTION,
        **options: Any,
    ) -> None:
        if isinstance(wait, bool) or not 0 <= wait <= 60:
            raise ValueError("wait must be from 0 to 60 seconds")
        self.wait = wait
        super().__init__(
            name=name,
            description=description,
            args_model=CheckInteractionInput,
            client=client,
            **options,
        )

    def _operation(self, arguments: BaseModel) -> Operation[Any, str]:
        interaction_id = cast(CheckInteractionInput, arguments).interaction_id
        wait = self.wait or None
        return Operation(
            lambda client: client.interactions.status(interaction_id, wait=wait), describe_status
        )


# --- the table --------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolRow:
    """One tool of the table: ``class_name`` (what users import from every adapter),
    ``kind`` (its options, description, argument schema, defaults and client call), and
    what the kind settles by default, for a reader of the table: ``name`` (what a model
    calls), ``channel`` (``None``: the tool chooses none, or takes it as an option) and
    ``waits`` (whether it holds the request for the answer by default)."""

    class_name: str
    kind: type[ToolCore]
    name: str
    channel: str | None
    waits: bool


def _message_row(kind: type[MessageTool]) -> ToolRow:
    waits = kind.default_wait_time is not None
    return ToolRow(kind.__name__, kind, kind.default_name, kind.channel, waits)


def _person_row(kind: type[PersonTool]) -> ToolRow:
    waits = kind.default_wait_time is not None
    return ToolRow(kind.__name__, kind, kind.default_name, None, waits)


TOOL_TABLE: tuple[ToolRow, ...] = (
    *(
        _message_row(kind)
        for kind in (
            AskHumanSMS,
            AskHumanWhatsApp,
            AskHumanSlack,
            AskHumanEmail,
            AskHumanTelegram,
            AskHumanTeams,
            AskHumanDiscord,
            NotifyHumanSMS,
            NotifyHumanWhatsApp,
            NotifyHumanSlack,
            NotifyHumanEmail,
            NotifyHumanTelegram,
            NotifyHumanTeams,
            NotifyHumanDiscord,
        )
    ),
    _person_row(AskHumanPerson),
    _person_row(NotifyHumanPerson),
    ToolRow("HumanForm", HumanForm, "human_form", None, True),
    ToolRow("AskHumanChannel", AskHumanChannel, "ask_human_channel", None, True),
    ToolRow("CallHuman", CallHuman, "call_human", "call", True),
    ToolRow("CheckHumanInteraction", CheckHumanInteraction, "check_human_interaction", None, False),
)
"""The humanwire tools, a row each: the message tools (an ask and a notify per channel of
:data:`~humanwire._tooling.CHANNEL_NAMES`), the ask and the notify of a person wherever
they are, the form, the channel card, the call and the
check (the order the MCP server lists them in)."""

TOOL_CLASS_NAMES: tuple[str, ...] = tuple(row.class_name for row in TOOL_TABLE)
"""The tool classes every adapter exports, in the table's order."""


# --- a kind without a framework ---------------------------------------------------------------

LISTING_TO = "+12025550100"
"""A recipient to build a kind with when only its name, description and schema are
wanted (any valid number): an adapter whose recipient is the call's builds the kind again
with it for each call (MCP, LlamaIndex)."""

LISTING_PERSON = "per_listing"
"""The same for a person tool: a person's id to build it with for its name and schema."""


class _Settled:
    """The end of a bare kind's MRO: keeps the name and description the kind settled."""

    def __init__(self, *, name: str, description: str) -> None:
        self.name = name
        self.description = description


class BareTool(ToolCore):
    """A kind built without a framework (:func:`bare`): what it settles (``name``,
    ``description``, ``args_model``, the client call) for an adapter whose tools are not
    objects of the kind's options (MCP, LlamaIndex)."""

    name: str
    description: str


_BARE: dict[type[ToolCore], Callable[..., BareTool]] = {}


def bare(kind: type[ToolCore]) -> Callable[..., BareTool]:
    """``kind`` joined to no framework (made once a kind), built with its own options."""
    if kind not in _BARE:
        _BARE[kind] = type(kind.__name__, (kind, BareTool, _Settled), {})
    return _BARE[kind]


def takes(kind: type[ToolCore], option: str) -> bool:
    """Whether ``kind`` takes ``option`` when it is built: ``to`` (it sends to a
    recipient fixed then), ``expose_recipient`` (the model may choose one)."""
    return option in inspect.signature(kind.__init__).parameters


def recipient_channel(tool: ToolCore) -> str:
    """The channel whose recipient a tool that takes one needs: its message or form
    channel; a call's is the sms number."""
    return str(getattr(tool, "channel", "sms"))
