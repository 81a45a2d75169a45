"""``HumanWireToolkit``: the humanwire tools configured once, for ``tools=[...]``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, BaseToolkit
from pydantic import Field, field_validator

from humanwire import _tool_kinds as kinds
from humanwire._tooling import MessageChannel
from humanwire.approval import check_follow_up_time, check_wait_time

from . import tools as _tools
from ._base import DEFAULT_WAIT_TIME

__all__ = ["HumanWireToolkit"]


def _message_tools(*, waits: bool) -> dict[str, Callable[..., BaseTool]]:
    """The message tools of the table by channel: the asks, or the notifies."""
    return {
        str(row.channel): getattr(_tools, row.class_name)
        for row in kinds.TOOL_TABLE
        if issubclass(row.kind, kinds.MessageTool) and row.waits == waits
    }


_ASK = _message_tools(waits=True)
_NOTIFY = _message_tools(waits=False)


class HumanWireToolkit(BaseToolkit):
    """The humanwire tools sharing one client, recipients and windows.

    By default: ``ask_human_<channel>`` for each of ``channels``, one dynamic
    ``human_form`` on the first channel (``form_channel``), and ``check_human_interaction``.
    ``notify=True`` adds ``notify_human_<channel>``; ``call=True`` adds ``call_human``;
    each of ``channel_ids`` adds ``ask_human_<channel_id>``. ``person`` (``per_…``) adds
    ``ask_human_person`` (and with ``notify``, ``notify_human_person``): that person of
    the people directory asked wherever they answer, ``fallback_after`` seconds before
    their next address.
    """

    client: Any = Field(default=None, exclude=True, repr=False)
    async_client: Any = Field(default=None, exclude=True, repr=False)
    channels: Sequence[MessageChannel] = ("sms",)
    sms_to: str | None = None
    whatsapp_to: str | None = None
    slack_to: str | None = None
    email_to: str | None = None
    telegram_to: str | None = None
    teams_to: str | None = None
    discord_to: str | None = None
    person: str | None = None
    fallback_after: float | None = None
    expose_recipient: bool = False
    wait_time: float = DEFAULT_WAIT_TIME
    follow_up_time: float | None = None
    form: bool = True
    form_channel: MessageChannel | None = None
    notify: bool = False
    call: bool = False
    call_transfer_to: str | None = None
    call_language: str = "en-US"
    check: bool = True
    channel_ids: Sequence[str] = ()

    @field_validator("channels")
    @classmethod
    def _known_channels(cls, value: Sequence[str]) -> Sequence[str]:
        if not value:
            raise ValueError(
                "channels: name at least one of sms, whatsapp, slack, email, telegram, teams, "
                "discord"
            )
        return tuple(dict.fromkeys(value))

    @field_validator("wait_time")
    @classmethod
    def _check_wait_time(cls, value: float) -> float:
        checked = check_wait_time(value)
        if checked is None:
            raise ValueError("wait_time is required")
        return checked

    @field_validator("follow_up_time")
    @classmethod
    def _check_follow_up_time(cls, value: float | None) -> float | None:
        return check_follow_up_time(value)

    def _recipient(self, channel: str) -> str | None:
        # A channel without a field of its own here: its variable, or the default human.
        recipient: str | None = getattr(self, f"{channel}_to", None)
        return recipient

    def _common(self) -> dict[str, Any]:
        return {"client": self.client, "async_client": self.async_client}

    def get_tools(self) -> list[BaseTool]:
        tools: list[BaseTool] = []
        windows: dict[str, Any] = {
            "wait_time": self.wait_time,
            "follow_up_time": self.follow_up_time,
        }
        for channel in self.channels:
            tools.append(
                _ASK[channel](
                    to=self._recipient(channel),
                    expose_recipient=self.expose_recipient,
                    **windows,
                    **self._common(),
                )
            )
        if self.person is not None:
            tools.append(
                _tools.AskHumanPerson(
                    person=self.person,
                    fallback_after=self.fallback_after,
                    expose_recipient=self.expose_recipient,
                    **windows,
                    **self._common(),
                )
            )
            if self.notify:
                tools.append(
                    _tools.NotifyHumanPerson(
                        person=self.person,
                        fallback_after=self.fallback_after,
                        expose_recipient=self.expose_recipient,
                        follow_up_time=self.follow_up_time,
                        **self._common(),
                    )
                )
        if self.notify:
            for channel in self.channels:
                tools.append(
                    _NOTIFY[channel](
                        to=self._recipient(channel),
                        expose_recipient=self.expose_recipient,
                        follow_up_time=self.follow_up_time,
                        **self._common(),
                    )
                )
        if self.form:
            form_channel = self.form_channel or self.channels[0]
            tools.append(
                _tools.HumanForm(
                    channel=form_channel,
                    to=self._recipient(form_channel),
                    expose_recipient=self.expose_recipient,
                    **windows,
                    **self._common(),
                )
            )
        for channel_id in self.channel_ids:
            tools.append(
                _tools.AskHumanChannel(
                    name=f"ask_human_{channel_id}", channel_id=channel_id, **self._common()
                )
            )
        if self.call:
            tools.append(
                _tools.CallHuman(
                    to=self.sms_to,
                    expose_recipient=self.expose_recipient,
                    transfer_to=self.call_transfer_to,
                    language=self.call_language,
                    **self._common(),
                )
            )
        if self.check:
            tools.append(_tools.CheckHumanInteraction(**self._common()))
        return tools
