"""humanwire for Microsoft Agent Framework (``pip install "humanwire[agent-framework]"``).

Tools an agent gets in ``tools=[...]``, and people answering the framework's own pauses:
a tool's ``approval_mode="always_require"`` request (by approval request) and a workflow's
``ctx.request_info`` (by a question), in the run or after a pause, in any process.
Everything goes through the core client; nothing here speaks HTTP::

    from agent_framework import Agent, tool
    from humanwire.agent_framework import AskHumanSMS, HumanApprovals

    @tool(approval_mode="always_require")
    def refund(order_id: str, amount: float) -> str: ...

    agent = Agent(client=chat_client, tools=[AskHumanSMS(), refund])
    result = await HumanApprovals().arun(agent, "Refund order 1042")

Tools (``humanwire.agent_framework.tools``)
    ``AskHumanSMS``, ``AskHumanWhatsApp``, ``AskHumanSlack``, ``AskHumanEmail`` (send and
    wait for the reply), ``NotifyHumanSMS`` / ``…WhatsApp`` / ``…Slack`` / ``…Email``
    (send, don't wait), ``AskHumanChannel(channel_id)``, ``HumanForm``, ``CallHuman``,
    ``CheckHumanInteraction``: each a ``FunctionTool``, named, described and shaped as
    the LangChain and MCP tools.
Pauses (``humanwire.agent_framework.runs``)
    ``HumanApprovals``: ``arun`` answers each approval request in the run; ``start`` sends
    and returns the paused run (save ``session.to_dict()``); ``resume`` /
    ``resume_from_webhook`` continue it from the saved session in any process.
    ``HumanRequests``: a workflow's ``request_info`` answered by a person, in the run or
    from a checkpoint.
"""

from __future__ import annotations

from humanwire._extras import Extra
from humanwire._tool_kinds import TOOL_CLASS_NAMES

INSTALL_HINT = Extra(
    "humanwire.agent_framework",
    "agent-framework",
    "Microsoft Agent Framework (agent-framework-core 1.23 or newer)",
    ("agent_framework",),
).require()

from .runs import (  # noqa: E402
    REQUEST_KEY,
    RESUME_AGENT_FRAMEWORK,
    SESSION_KEY,
    STATE_KEY,
    HumanApprovals,
    PendingRequest,
    SessionStore,
)
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import HumanWireTool  # noqa: E402
from .workflows import WORKFLOW_REQUEST_KEY, HumanRequests, Request, question_text  # noqa: E402

__all__ = [
    "INSTALL_HINT",
    "REQUEST_KEY",
    "RESUME_AGENT_FRAMEWORK",
    "SESSION_KEY",
    "STATE_KEY",
    "WORKFLOW_REQUEST_KEY",
    "HumanApprovals",
    "HumanRequests",
    "HumanWireTool",
    "PendingRequest",
    "Request",
    "SessionStore",
    "question_text",
    *TOOL_CLASS_NAMES,
]
