"""humanwire for Pydantic AI (``pip install "humanwire[pydantic-ai]"``; Python 3.11+).

Tools an agent developer drops into ``tools=[...]`` or ``toolsets=[...]``. Everything goes
through the core client; nothing here speaks HTTP itself::

    from pydantic_ai import Agent
    from humanwire.pydantic_ai import AskHumanSMS, HumanForm

    agent = Agent("openai:gpt-5", tools=[AskHumanSMS(), HumanForm()])

Tools (``humanwire.pydantic_ai.tools``)
    ``AskHumanSMS``, ``AskHumanWhatsApp``, ``AskHumanSlack`` (send and wait for the reply),
    ``NotifyHumanSMS`` / ``…WhatsApp`` / ``…Slack`` (send, don't wait),
    ``AskHumanChannel(channel_id)`` (through a channel card), ``HumanForm`` (fixed or
    model-designed), ``CallHuman``, ``CheckHumanInteraction``: each a ``pydantic_ai.Tool``
    named, described and shaped as the LangChain and MCP tools (``ask_human_sms``, …).
    ``HumanWireToolset(...)`` is a ``FunctionToolset`` of them with shared options.

Decisions (what Pydantic AI leaves open, settled here)

- **Recipients** are fixed when a tool is built, as for LangChain: ``to=``, else
  ``HUMANWIRE_SMS_TO`` / ``HUMANWIRE_WHATSAPP_TO`` / ``HUMANWIRE_SLACK_TO``, else (embedded
  service) the inbox's default human; ``expose_recipient=True`` lets the model give one.
- **Clients.** ``client=`` may be a ``HumanWire`` or an ``AsyncHumanWire``; the tools run
  on an async client (the one given, else one per event loop on the sync client's
  service and account, else from the environment).
- **Results.** The text for the model; the typed response (``MessageResponse``,
  ``FormResponse``, ``CallResponse``, ``InteractionStatus``) as ``ToolReturn.metadata``,
  kept in the history and never sent to the model. A human who does not answer in time is
  a normal result (the no-response text); so is a missed call.
- **Errors.** Arguments that do not fit the schema, and a form the model designed badly,
  are ``ModelRetry`` (``humanwire: invalid arguments: <field>: <problem>``): the model is
  asked to fix its call, within the tool's retry budget. A service error (refused, bad
  key, unknown interaction, rate limit, unreachable) is ``ToolFailed`` (``humanwire:
  <reason>``): Pydantic AI's terminal tool failure, which the model sees and adapts to
  without a retry prompt and without ending the run. A retry prompt would be wrong for a
  401 or an outage: asking again does not mend them.
"""

from __future__ import annotations

from ._require import INSTALL_HINT, require_pydantic_ai

require_pydantic_ai()

from .tools import (  # noqa: E402
    AskHumanChannel,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CallHuman,
    CheckHumanInteraction,
    HumanForm,
    HumanWireTool,
    NotifyHumanSlack,
    NotifyHumanSMS,
    NotifyHumanWhatsApp,
)
from .toolset import HumanWireToolset  # noqa: E402

__all__ = [
    "INSTALL_HINT",
    "AskHumanChannel",
    "AskHumanSMS",
    "AskHumanSlack",
    "AskHumanWhatsApp",
    "CallHuman",
    "CheckHumanInteraction",
    "HumanForm",
    "HumanWireTool",
    "HumanWireToolset",
    "NotifyHumanSMS",
    "NotifyHumanSlack",
    "NotifyHumanWhatsApp",
]
