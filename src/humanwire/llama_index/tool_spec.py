"""``HumanWireToolSpec``: the humanwire tools as LlamaIndex tools, each with a sync and an
async function, derived from the tool table (``humanwire._tool_kinds.TOOL_TABLE``).

Each row's kind settles the tool's name, description, argument schema and client call
(every adapter reads the same); the spec holds what is LlamaIndex's own: the recipients,
resolved once for all its tools, which tools it offers, ``notify_human`` (one tool that
sends on the channel the model picks, over the table's notify tools), and two names its
users know (``ask_human_form`` for ``human_form``). A tool added to the table is offered
here with no code of its own.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from llama_index.core.tools import FunctionTool, ToolMetadata
from llama_index.core.tools.tool_spec.base import SPEC_FUNCTION_TYPE, BaseToolSpec
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import PydanticCustomError

from humanwire._tool_kinds import (
    LISTING_TO,
    PERSON_ENV,
    TOOL_TABLE,
    AskHumanChannel,
    CallHuman,
    HumanForm,
    MessageTool,
    PersonTool,
    ToolRow,
    bare,
    check_fallback_after,
    check_person,
    recipient_channel,
    takes,
)
from humanwire._tooling import (
    NOTE,
    PHONE_TO,
    FormFieldSpec,
    MessageChannel,
    Operation,
    OptionalText,
    describe_status,
    optional_text,
)
from humanwire.approval import (
    MESSAGE_RECIPIENT_ENV,
    RECIPIENT_ENV,
    check_follow_up_time,
    check_wait_time,
    resolve_recipient,
)
from humanwire.errors import error_from_validation, invalid_request
from humanwire.types import CallRequest, FormField, check_metadata

from ._tools import HumanWireFunctionTool

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = ["DEFAULT_WAIT_TIME", "HumanWireToolSpec", "describe_status"]

TextChannel = MessageChannel
FormChannel = MessageChannel
_NOTIFY_ROWS = {
    str(row.channel): row
    for row in TOOL_TABLE
    if issubclass(row.kind, MessageTool) and not row.waits
}
"""The table's notify tools by channel: ``notify_human`` sends through them."""
_CHANNELS = cast("tuple[TextChannel, ...]", tuple(_NOTIFY_ROWS))
_FIRST_CHANNELS = ("sms", "whatsapp", "slack")
"""The channels the spec first offered; a newer one's ask tool is offered once it has a
recipient, so a tool list that needed none before does not start refusing."""
_NAMES = {"human_form": "ask_human_form"}
"""The LlamaIndex names that are not the table's (its users' ``spec_functions`` name them)."""
NOTIFY = "notify_human"

DEFAULT_WAIT_TIME = 300
"""Seconds an ``ask_*`` tool holds the request open for the answer, unless told."""


class _Args(BaseModel):
    # Unknown arguments are refused so a model learns the real parameters.
    model_config = ConfigDict(extra="forbid")


def _args(name: str, **fields: Any) -> type[BaseModel]:
    return cast(type[BaseModel], create_model(name, __base__=_Args, **fields))


@functools.cache
def _strict(model: type[BaseModel]) -> type[BaseModel]:
    """A kind's argument model refusing unknown arguments (same fields, same name)."""
    strict: type[BaseModel] = type(model.__name__, (model,), {"model_config": _Args.model_config})
    return strict


@dataclass(frozen=True)
class _Tool:
    name: str
    description: str
    schema: type[BaseModel]
    operation: Callable[[dict[str, Any]], Operation[Any, str]]
    """The model's arguments → the client call (raises ``HumanWireError`` for arguments
    the model must fix, ``ValueError`` for a recipient the developer must configure)."""
    channels: tuple[TextChannel, ...] = ()
    """The recipients the tool needs (the model may pick among several: notify)."""


def _spec_name(row: ToolRow) -> str:
    return _NAMES.get(row.name, row.name)


def _default_functions() -> list[SPEC_FUNCTION_TYPE]:
    """The table's tools, the notify ones as ``notify_human`` after the asks (the
    order the spec has always listed them in)."""
    rows = [row for row in TOOL_TABLE if row not in _NOTIFY_ROWS.values()]
    asking = (MessageTool, AskHumanChannel)
    asks = [_spec_name(row) for row in rows if issubclass(row.kind, asking)]
    rest = [_spec_name(row) for row in rows if not issubclass(row.kind, asking)]
    return [(name, f"a{name}") for name in [*asks, NOTIFY, *rest]]


class HumanWireToolSpec(BaseToolSpec):
    """Tools that reach a human through humanwire and return what they answered.

    Recipients are fixed here, not chosen by the model: ``to`` (a phone number, used for
    sms, whatsapp and calls), ``whatsapp_to``, ``slack_to``, ``email_to``, ``telegram_to``,
    ``teams_to`` and ``discord_to`` override per channel; left out, each comes from
    ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO`` /
    ``HUMANWIRE_EMAIL_TO`` / ``HUMANWIRE_TELEGRAM_TO`` / ``HUMANWIRE_TEAMS_TO`` /
    ``HUMANWIRE_DISCORD_TO``, else (embedded service) the inbox's default human.
    ``ask_human_email``, ``ask_human_telegram``, ``ask_human_teams`` and
    ``ask_human_discord`` are offered only when their channel has a recipient. They are
    resolved here, once; ``to_tool_list()`` refuses a tool whose recipient is missing
    (naming the variable to set) and offers ``notify_human`` only the channels that have
    one. With ``expose_recipients=True`` the tools take an optional ``to`` the model may
    fill.

    ``form_fields`` (with ``form_title``) fixes the form ``ask_human_form`` sends; without
    them the model designs the form. ``channel_id`` adds ``ask_human_channel`` for a
    channel card. ``to_tool_list()`` returns every tool; pass ``spec_functions`` (names of
    the sync functions) to pick some. ``metadata`` (string keys and values, docs/design.md
    "Metadata") goes with every send and comes back on its status and events.
    """

    spec_functions: list[SPEC_FUNCTION_TYPE] = _default_functions()

    def __init__(
        self,
        client: HumanWire | None = None,
        *,
        async_client: AsyncHumanWire | None = None,
        to: str | None = None,
        whatsapp_to: str | None = None,
        slack_to: str | None = None,
        email_to: str | None = None,
        telegram_to: str | None = None,
        teams_to: str | None = None,
        discord_to: str | None = None,
        person: str | None = None,
        fallback_after: float | None = None,
        expose_recipients: bool = False,
        wait_time: float = DEFAULT_WAIT_TIME,
        follow_up_time: float | None = None,
        channel_id: str | None = None,
        form_channel: FormChannel = "sms",
        form_title: str | None = None,
        form_fields: Sequence[FormField | Mapping[str, Any]] | None = None,
        form_description: str | None = None,
        transfer_to: str | None = None,
        language: str = "en-US",
        voice: Literal["female", "male"] = "female",
        wait_for_call_end: bool = True,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if form_channel not in _CHANNELS:
            raise ValueError(
                "form_channel must be sms, whatsapp, slack, email, telegram, teams or discord, "
                f"got {form_channel!r}"
            )
        if wait_time is None:
            raise ValueError("wait_time is required: the ask tools wait for the answer")
        self.wait_time = cast(float, check_wait_time(wait_time))
        self.follow_up_time = check_follow_up_time(follow_up_time)
        self._client = client
        self._async_client = async_client
        person = person or os.environ.get(PERSON_ENV, "").strip() or None
        self.person = None if person is None else check_person(person)
        self.fallback_after = check_fallback_after(fallback_after)
        self.expose_recipients = expose_recipients
        self.channel_id = channel_id
        self.form_channel: FormChannel = form_channel
        self.form_title = form_title
        self.form_description = form_description
        self.form_fields: list[FormField] | None = None
        if form_fields is not None:
            if not form_title:
                raise ValueError("form_fields needs a form_title")
            self.form_fields = [FormField.model_validate(f) for f in form_fields]
        # The wire model checks the call options now, not at the model's first call.
        CallRequest(
            prompt="check", to=LISTING_TO, transfer_to=transfer_to, language=language, voice=voice
        )
        self.transfer_to = transfer_to
        try:
            # Every send carries it (docs/design.md "Metadata"); checked now, not at the first call.
            self.metadata = check_metadata(metadata) if metadata is not None else None
        except PydanticCustomError as exc:
            raise ValueError(f"metadata: {exc}") from None
        self.language = language
        self.voice: Literal["female", "male"] = voice
        self.wait_for_call_end = wait_for_call_end
        self._recipients: dict[str, str | None] = {}
        self._missing: dict[str, str] = {}
        configured = {
            "sms": to,
            "whatsapp": whatsapp_to or to,
            "slack": slack_to,
            "email": email_to,
            "telegram": telegram_to,
            "teams": teams_to,
            "discord": discord_to,
        }
        for channel in _CHANNELS:
            try:
                self._recipients[channel] = resolve_recipient(
                    # A channel with no option of its own here: its variable, or the default human.
                    channel,
                    configured.get(channel),
                    client or async_client,
                )
            except ValueError as exc:
                self._recipients[channel] = None
                self._missing[channel] = str(exc)
        left_out = set()
        if channel_id is None:
            left_out.add("ask_human_channel")
        if self.person is None:
            left_out.update(r.name for r in TOOL_TABLE if issubclass(r.kind, PersonTool))
        for channel in _CHANNELS:
            newer = channel not in _FIRST_CHANNELS
            if newer and self._recipients[channel] is None and not expose_recipients:
                left_out.add(f"ask_human_{channel}")
        # The table as it is now (a row added after import is offered too).
        self.spec_functions = [pair for pair in _default_functions() if pair[0] not in left_out]
        self._tools = {tool.name: tool for tool in self._tool_table()}

    # --- clients and recipients ---------------------------------------------------------

    @property
    def client(self) -> HumanWire:
        """The sync client: the one given, else one for the async client's service."""
        from humanwire._client import sync_client_for

        self._client = sync_client_for(self._client, self._async_client)
        return self._client

    @property
    def async_client(self) -> AsyncHumanWire:
        """The async client: the one given, else one for the sync client's service."""
        from humanwire._client import async_client_for

        self._async_client = async_client_for(self._client, self._async_client)
        return self._async_client

    def _recipient(self, channel: TextChannel, to: str | None) -> str:
        if to is not None and not self.expose_recipients:
            raise invalid_request(
                "the recipient is fixed for this tool: leave 'to' out", field="to"
            )
        recipient = to or self._recipients[channel]
        if recipient is None:
            if self.expose_recipients:  # the model can fix it
                raise invalid_request(f"no default {channel} recipient: give 'to'", field="to")
            raise ValueError(self._missing[channel])
        return recipient

    def _windows(self) -> dict[str, Any]:
        return {"wait_time": self.wait_time, "follow_up_time": self.follow_up_time}

    def _metadata(self) -> dict[str, Any]:
        return {"metadata": self.metadata} if self.metadata else {}

    # --- the functions the tools call ---------------------------------------------------

    def _operation(self, name: str, arguments: Mapping[str, Any]) -> Operation[Any, str]:
        """The client call of tool ``name`` for ``arguments`` (left out: ``None``)."""
        if name not in self._tools:
            raise ValueError(f"unknown humanwire tool {name!r}: one of {sorted(self._tools)}")
        given = {key: value for key, value in arguments.items() if value is not None}
        return self._tools[name].operation(given)

    def call_tool(self, name: str, /, **arguments: Any) -> str:
        """Run tool ``name`` (a name of ``to_tool_list``'s) on the sync client; raises the
        ``humanwire.errors`` exception."""
        return self._operation(name, arguments).run(self.client)

    async def acall_tool(self, name: str, /, **arguments: Any) -> str:
        """Run tool ``name`` on the async client; raises the ``humanwire.errors`` one."""
        return await self._operation(name, arguments).arun(self.async_client)

    # The functions of the spec's first tools, kept for code that calls them directly.

    def ask_human_sms(self, message: str, to: str | None = None) -> str:
        """Text a person by SMS and wait for their reply."""
        return self.call_tool("ask_human_sms", message=message, to=to)

    async def aask_human_sms(self, message: str, to: str | None = None) -> str:
        return await self.acall_tool("ask_human_sms", message=message, to=to)

    def ask_human_whatsapp(self, message: str, to: str | None = None) -> str:
        """Message a person on WhatsApp and wait for their reply."""
        return self.call_tool("ask_human_whatsapp", message=message, to=to)

    async def aask_human_whatsapp(self, message: str, to: str | None = None) -> str:
        return await self.acall_tool("ask_human_whatsapp", message=message, to=to)

    def ask_human_slack(self, message: str, to: str | None = None) -> str:
        """Message a person on Slack and wait for their reply in the thread."""
        return self.call_tool("ask_human_slack", message=message, to=to)

    async def aask_human_slack(self, message: str, to: str | None = None) -> str:
        return await self.acall_tool("ask_human_slack", message=message, to=to)

    def ask_human_email(self, message: str, to: str | None = None) -> str:
        """Email a person and wait for their reply to it."""
        return self.call_tool("ask_human_email", message=message, to=to)

    async def aask_human_email(self, message: str, to: str | None = None) -> str:
        return await self.acall_tool("ask_human_email", message=message, to=to)

    def ask_human_telegram(self, message: str, to: str | None = None) -> str:
        """Message a person on Telegram from the bot and wait for their reply in the chat."""
        return self.call_tool("ask_human_telegram", message=message, to=to)

    async def aask_human_telegram(self, message: str, to: str | None = None) -> str:
        return await self.acall_tool("ask_human_telegram", message=message, to=to)

    def ask_human_teams(self, message: str, to: str | None = None) -> str:
        """Message a person on Microsoft Teams from the bot and wait for their next message
        in their chat with it."""
        return self.call_tool("ask_human_teams", message=message, to=to)

    async def aask_human_teams(self, message: str, to: str | None = None) -> str:
        return await self.acall_tool("ask_human_teams", message=message, to=to)

    def ask_human_discord(self, message: str, to: str | None = None) -> str:
        """Message a person (a DM) or a channel on Discord from the bot and wait for the
        text typed through the message's Reply button."""
        return self.call_tool("ask_human_discord", message=message, to=to)

    async def aask_human_discord(self, message: str, to: str | None = None) -> str:
        return await self.acall_tool("ask_human_discord", message=message, to=to)

    def ask_human_channel(self, message: str) -> str:
        """Send through the configured channel card and return what it answers."""
        return self.call_tool("ask_human_channel", message=message)

    async def aask_human_channel(self, message: str) -> str:
        return await self.acall_tool("ask_human_channel", message=message)

    def notify_human(
        self, message: str, channel: TextChannel = "sms", to: str | None = None
    ) -> str:
        """Send a message without waiting for an answer."""
        return self.call_tool(NOTIFY, message=message, channel=channel, to=to)

    async def anotify_human(
        self, message: str, channel: TextChannel = "sms", to: str | None = None
    ) -> str:
        return await self.acall_tool(NOTIFY, message=message, channel=channel, to=to)

    def ask_human_form(
        self,
        title: str | None = None,
        fields: Sequence[FormFieldSpec | Mapping[str, Any]] | None = None,
        description: str | None = None,
        message: str | None = None,
        to: str | None = None,
    ) -> str:
        """Send a web form link and wait for the submitted values."""
        design = {"title": title, "fields": fields, "description": description}
        return self.call_tool("ask_human_form", **design, message=message, to=to)

    async def aask_human_form(
        self,
        title: str | None = None,
        fields: Sequence[FormFieldSpec | Mapping[str, Any]] | None = None,
        description: str | None = None,
        message: str | None = None,
        to: str | None = None,
    ) -> str:
        design = {"title": title, "fields": fields, "description": description}
        return await self.acall_tool("ask_human_form", **design, message=message, to=to)

    def call_human(self, prompt: str, to: str | None = None) -> str:
        """Place a voice call and return how it went."""
        return self.call_tool("call_human", prompt=prompt, to=to)

    async def acall_human(self, prompt: str, to: str | None = None) -> str:
        return await self.acall_tool("call_human", prompt=prompt, to=to)

    def check_human_interaction(self, interaction_id: str) -> str:
        """Look up whether an earlier message, form or call has been answered."""
        return self.call_tool("check_human_interaction", interaction_id=interaction_id)

    async def acheck_human_interaction(self, interaction_id: str) -> str:
        return await self.acall_tool("check_human_interaction", interaction_id=interaction_id)

    # --- tools --------------------------------------------------------------------------

    def _notify_channels(self) -> tuple[TextChannel, ...]:
        """The channels ``notify_human`` offers: those with a recipient (all of them when
        the model may name one)."""
        if self.expose_recipients:
            return _CHANNELS
        return tuple(c for c in _CHANNELS if self._recipients[c] is not None)

    def _options(self, row: ToolRow) -> dict[str, Any] | None:
        """What the spec's options settle of ``row``'s kind (``None``: not offered)."""
        kind, windows = (
            row.kind,
            {"wait_time": self.wait_time, "follow_up_time": self.follow_up_time},
        )
        if issubclass(kind, MessageTool):
            return windows if row.waits else {}
        if issubclass(kind, PersonTool):
            if self.person is None:
                return None
            person = {"person": self.person, "fallback_after": self.fallback_after}
            return {**(windows if row.waits else {}), **person}
        if issubclass(kind, HumanForm):
            fixed: dict[str, Any] = {}
            if self.form_fields is not None:
                fixed = {"title": self.form_title, "fields": self.form_fields}
                fixed["form_description"] = self.form_description
            return {"channel": self.form_channel, **windows, **fixed}
        if issubclass(kind, AskHumanChannel):
            return None if self.channel_id is None else {"channel_id": self.channel_id}
        if issubclass(kind, CallHuman):
            call = {"transfer_to": self.transfer_to, "language": self.language}
            return {**call, "voice": self.voice, "wait_for_call_end": self.wait_for_call_end}
        return {}

    def _table_tool(self, row: ToolRow, options: dict[str, Any]) -> _Tool:
        """``row``'s tool: the kind's name, description, schema (unknown arguments
        refused) and call, built for each call with the recipient the spec resolves."""
        built, takes_to = bare(row.kind), takes(row.kind, "to")
        exposes = takes(row.kind, "expose_recipient")
        exposed = {"expose_recipient": self.expose_recipients} if exposes else {}
        listed = built(**options, **exposed, **({"to": LISTING_TO} if takes_to else {}))
        channel = cast(TextChannel, recipient_channel(listed))

        schema = _strict(listed.args_model)

        def operation(arguments: dict[str, Any]) -> Operation[Any, str]:
            try:
                # A direct call's arguments too (a tool's are checked already).
                given = dict(schema.model_validate(arguments))
            except ValidationError as exc:
                raise error_from_validation(exc) from None
            given = {key: value for key, value in given.items() if value is not None}
            to = given.pop("to", None)
            # The recipient is the spec's (or the model's, when exposed): fixed in the kind.
            recipient = {"to": self._recipient(channel, to)} if takes_to else {}
            # A person tool keeps the model's person itself (the spec resolves no "to").
            mine = exposed if issubclass(row.kind, PersonTool) else {}
            tool = built(**options, **mine, **recipient, metadata=self.metadata)
            try:
                return tool.operation_for(given)
            except ValidationError as exc:  # a direct call the schema did not check
                raise error_from_validation(exc) from None

        return _Tool(
            _spec_name(row),
            listed.description,
            schema,
            operation,
            (channel,) if takes_to else (),
        )

    def _notify_tool(self, tools: Mapping[str, _Tool]) -> _Tool:
        """``notify_human``: the table's notify tools as one, on the channel the model
        picks among those with a recipient."""
        notify_channels = self._notify_channels() or ("sms",)
        channel_type: Any = Literal.__getitem__(notify_channels)  # type: ignore[attr-defined]
        schema = _args(
            "NotifyHumanArgs",
            message=(str, Field(min_length=1, description=NOTE)),
            channel=(
                channel_type,
                Field(
                    default=notify_channels[0],
                    description=f"Where to send it: {', '.join(notify_channels)}.",
                ),
            ),
            # The model may name a recipient: a phone number, as the old spec's notify said.
            **({"to": (OptionalText, optional_text(PHONE_TO))} if self.expose_recipients else {}),
        )

        def operation(arguments: dict[str, Any]) -> Operation[Any, str]:
            given = dict(arguments)
            channel = given.pop("channel", "sms")
            if channel not in _NOTIFY_ROWS:
                choices = ", ".join(_CHANNELS)
                raise invalid_request(f"channel must be one of {choices}", field="channel")
            return tools[_NOTIFY_ROWS[channel].name].operation(given)

        return _Tool(
            NOTIFY,
            "Send a human a one-way message (a status update, a result) without waiting "
            "for any answer. Returns at once with the interaction id.",
            schema,
            operation,
            self._notify_channels(),
        )

    def _tool_table(self) -> list[_Tool]:
        """The table's tools the spec's options offer, and ``notify_human``."""
        tools = {
            tool.name: tool
            for row in TOOL_TABLE
            if (options := self._options(row)) is not None
            for tool in [self._table_tool(row, options)]
        }
        return [*tools.values(), self._notify_tool(tools)]

    def _check_recipients(self, tool: _Tool) -> None:
        """A tool whose recipient is missing is refused now, naming the variable, rather
        than failing when the model first calls it."""
        if self.expose_recipients:
            return
        if tool.name == NOTIFY:
            if self._notify_channels():
                return
            names = {**RECIPIENT_ENV, **MESSAGE_RECIPIENT_ENV}
            variables = ", ".join(names[c] for c in _CHANNELS)
            raise ValueError(
                f"notify_human needs a recipient on some channel: pass to=... or set one of "
                f"{variables}, or leave the tool out with to_tool_list(spec_functions=[...])"
            )
        for channel in tool.channels:
            if self._recipients[channel] is None:
                raise ValueError(
                    f"{tool.name}: {self._missing[channel]}; or leave the tool out with "
                    "to_tool_list(spec_functions=[...])"
                )

    def to_tool_list(
        self,
        spec_functions: list[SPEC_FUNCTION_TYPE] | None = None,
        func_to_metadata_mapping: dict[str, ToolMetadata] | None = None,
    ) -> list[FunctionTool]:
        """The tools, with their model-facing descriptions and argument schemas.

        ``spec_functions`` picks tools by name (the sync function's name, or a pair).
        A service error becomes an error output (``ToolOutput.is_error``), never an
        exception; a human who does not answer is a normal output. A tool whose recipient
        is missing raises ``ValueError`` here, naming the variable to set.
        """
        chosen = spec_functions or self.spec_functions
        mapping = func_to_metadata_mapping or {}
        tools: list[FunctionTool] = []
        for spec in chosen:
            name = spec if isinstance(spec, str) else spec[0]
            if name not in self._tools:
                raise ValueError(f"unknown humanwire tool {name!r}: one of {sorted(self._tools)}")
            tool = self._tools[name]
            self._check_recipients(tool)
            metadata = mapping.get(name) or ToolMetadata(
                name=tool.name, description=tool.description, fn_schema=tool.schema
            )
            tools.append(
                HumanWireFunctionTool(
                    fn=functools.partial(self.call_tool, tool.name),
                    async_fn=functools.partial(self.acall_tool, tool.name),
                    metadata=metadata,
                )
            )
        return tools
