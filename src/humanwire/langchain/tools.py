"""The humanwire tools as LangChain ``BaseTool`` classes, one a row of the tool table
(``humanwire._tool_kinds.TOOL_TABLE``): ``tools=[AskHumanSMS(), HumanForm()]``.

Each class is its kind (options, name, description for the model, argument schema and
client call, written once for every adapter) joined to :class:`~._base.HumanWireTool`,
which runs the call on the sync client for ``invoke`` and on the async one for
``ainvoke``. A tool added to the table is a line here.
"""

from __future__ import annotations

from humanwire import _tool_kinds as kinds
from humanwire._tooling import describe_status

from ._base import HumanWireTool

__all__ = ["HumanWireTool", "describe_status", *kinds.TOOL_CLASS_NAMES]


# --- the tools: a kind (options, schema, call) joined to LangChain ------------------------


class AskHumanSMS(kinds.AskHumanSMS, HumanWireTool): ...


class AskHumanWhatsApp(kinds.AskHumanWhatsApp, HumanWireTool): ...


class AskHumanSlack(kinds.AskHumanSlack, HumanWireTool): ...


class AskHumanEmail(kinds.AskHumanEmail, HumanWireTool): ...


class AskHumanTelegram(kinds.AskHumanTelegram, HumanWireTool): ...


class AskHumanTeams(kinds.AskHumanTeams, HumanWireTool): ...


class AskHumanDiscord(kinds.AskHumanDiscord, HumanWireTool): ...


class NotifyHumanSMS(kinds.NotifyHumanSMS, AskHumanSMS): ...


class NotifyHumanWhatsApp(kinds.NotifyHumanWhatsApp, AskHumanWhatsApp): ...


class NotifyHumanSlack(kinds.NotifyHumanSlack, AskHumanSlack): ...


class NotifyHumanEmail(kinds.NotifyHumanEmail, AskHumanEmail): ...


class NotifyHumanTelegram(kinds.NotifyHumanTelegram, AskHumanTelegram): ...


class NotifyHumanTeams(kinds.NotifyHumanTeams, AskHumanTeams): ...


class NotifyHumanDiscord(kinds.NotifyHumanDiscord, AskHumanDiscord): ...


class AskHumanPerson(kinds.AskHumanPerson, HumanWireTool): ...


class NotifyHumanPerson(kinds.NotifyHumanPerson, AskHumanPerson): ...


class AskHumanChannel(kinds.AskHumanChannel, HumanWireTool): ...


class HumanForm(kinds.HumanForm, HumanWireTool): ...


class CallHuman(kinds.CallHuman, HumanWireTool): ...


class CheckHumanInteraction(kinds.CheckHumanInteraction, HumanWireTool): ...
