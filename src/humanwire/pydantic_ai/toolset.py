"""``HumanWireToolset``: the humanwire tools configured once, as a Pydantic AI toolset."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_ai.toolsets import FunctionToolset

from humanwire._tool_kinds import DEFAULT_WAIT_TIME
from humanwire._tooling import MessageChannel
from humanwire.approval import check_wait_time

from .tools import (
    AskHumanChannel,
    AskHumanDiscord,
    AskHumanEmail,
    AskHumanPerson,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanTeams,
    AskHumanTelegram,
    AskHumanWhatsApp,
    CallHuman,
    CheckHumanInteraction,
    HumanForm,
    HumanWireTool,
    NotifyHumanDiscord,
    NotifyHumanEmail,
    NotifyHumanPerson,
    NotifyHumanSlack,
    NotifyHumanSMS,
    NotifyHumanTeams,
    NotifyHumanTelegram,
    NotifyHumanWhatsApp,
)

if TYPE_CHECKING:
    from humanwire._client import AsyncHumanWire, HumanWire

__all__ = ["HumanWireToolset"]

_ASK: dict[str, Callable[..., HumanWireTool]] = {
    "sms": AskHumanSMS,
    "whatsapp": AskHumanWhatsApp,
    "slack": AskHumanSlack,
    "email": AskHumanEmail,
    "telegram": AskHumanTelegram,
    "teams": AskHumanTeams,
    "discord": AskHumanDiscord,
}
_NOTIFY: dict[str, Callable[..., HumanWireTool]] = {
    "sms": NotifyHumanSMS,
    "whatsapp": NotifyHumanWhatsApp,
    "slack": NotifyHumanSlack,
    "email": NotifyHumanEmail,
    "telegram": NotifyHumanTelegram,
    "teams": NotifyHumanTeams,
    "discord": NotifyHumanDiscord,
}


class HumanWireToolset(FunctionToolset[Any]):
    """The humanwire tools sharing one client, recipients and windows, as a Pydantic AI
    toolset (``Agent(toolsets=[HumanWireToolset()])``).

    By default: ``ask_human_<channel>`` for each of ``channels``, one dynamic
    ``human_form`` on the first channel (``form_channel``), and ``check_human_interaction``.
    ``notify=True`` adds ``notify_human_<channel>``; ``call=True`` adds ``call_human``;
    each of ``channel_ids`` adds ``ask_human_<channel_id>``. ``person`` (``per_…``) adds
    ``ask_human_person`` (and with ``notify``, ``notify_human_person``): that person of
    the people directory asked wherever they answer, ``fallback_after`` seconds before
    their next address. The options are those of LangChain's ``HumanWireToolkit``.
    """

    def __init__(
        self,
        *,
        client: HumanWire | AsyncHumanWire | None = None,
        async_client: AsyncHumanWire | None = None,
        channels: Sequence[MessageChannel] = ("sms",),
        sms_to: str | None = None,
        whatsapp_to: str | None = None,
        slack_to: str | None = None,
        email_to: str | None = None,
        telegram_to: str | None = None,
        teams_to: str | None = None,
        discord_to: str | None = None,
        person: str | None = None,
        fallback_after: float | None = None,
        expose_recipient: bool = False,
        wait_time: float = DEFAULT_WAIT_TIME,
        follow_up_time: float | None = None,
        form: bool = True,
        form_channel: MessageChannel | None = None,
        notify: bool = False,
        call: bool = False,
        call_transfer_to: str | None = None,
        call_language: str = "en-US",
        check: bool = True,
        channel_ids: Sequence[str] = (),
        metadata: Mapping[str, str] | None = None,
        id: str | None = None,
    ) -> None:
        channels = tuple(dict.fromkeys(channels))
        if not channels:
            raise ValueError(
                "channels: name at least one of sms, whatsapp, slack, email, telegram, teams, "
                "discord"
            )
        unknown = [channel for channel in channels if channel not in _ASK]
        if unknown:
            raise ValueError(
                f"channels: unknown {unknown}; use sms, whatsapp, slack, email, telegram, "
                "teams, discord"
            )
        if check_wait_time(wait_time) is None:
            raise ValueError("wait_time is required")
        recipients = {
            "sms": sms_to,
            "whatsapp": whatsapp_to,
            "slack": slack_to,
            "email": email_to,
            "telegram": telegram_to,
            "teams": teams_to,
            "discord": discord_to,
        }
        common: dict[str, Any] = {"client": client, "async_client": async_client}
        if metadata:
            common["metadata"] = metadata
        windows: dict[str, Any] = {"wait_time": wait_time, "follow_up_time": follow_up_time}
        tools: list[HumanWireTool] = [
            _ASK[channel](
                to=recipients[channel], expose_recipient=expose_recipient, **windows, **common
            )
            for channel in channels
        ]
        if person is not None:
            tools.append(
                AskHumanPerson(
                    person=person,
                    fallback_after=fallback_after,
                    expose_recipient=expose_recipient,
                    **windows,
                    **common,
                )
            )
            if notify:
                tools.append(
                    NotifyHumanPerson(
                        person=person,
                        fallback_after=fallback_after,
                        expose_recipient=expose_recipient,
                        follow_up_time=follow_up_time,
                        **common,
                    )
                )
        if notify:
            tools += [
                _NOTIFY[channel](
                    to=recipients[channel],
                    expose_recipient=expose_recipient,
                    follow_up_time=follow_up_time,
                    **common,
                )
                for channel in channels
            ]
        if form:
            chosen = form_channel or channels[0]
            tools.append(
                HumanForm(
                    channel=chosen,
                    to=recipients[chosen],
                    expose_recipient=expose_recipient,
                    **windows,
                    **common,
                )
            )
        tools += [
            AskHumanChannel(channel_id, name=f"ask_human_{channel_id}", **common)
            for channel_id in channel_ids
        ]
        if call:
            tools.append(
                CallHuman(
                    to=sms_to,
                    expose_recipient=expose_recipient,
                    transfer_to=call_transfer_to,
                    language=call_language,
                    **common,
                )
            )
        if check:
            tools.append(CheckHumanInteraction(client=client, async_client=async_client))
        super().__init__(tools, id=id)
