"""humanwire for the Claude Agent SDK (``pip install "humanwire[claude-agent-sdk]"``).

Tools an agent gets as in-process SDK MCP tools, and people approving its tool calls on the
SDK's own seams (``can_use_tool``, a ``PreToolUse`` hook that may ``defer`` the call and
be resumed in another process), and answering Claude Code's ``AskUserQuestion``.
Everything goes through the core client; nothing here speaks HTTP::

    from humanwire.claude_agent_sdk import (
        AskHumanSMS, HumanApprovals, humanwire_server, run_session)

    tools = [AskHumanSMS()]
    gate = HumanApprovals(["Bash"], to="+14155550123")
    options = gate.options(mcp_servers={"humanwire": humanwire_server(tools)})
    result = await run_session(options, "Text the customer, then run the refund script")

Tools (``humanwire.claude_agent_sdk.tools``)
    ``AskHumanSMS``, ``AskHumanWhatsApp``, ``AskHumanSlack``, ``AskHumanEmail`` (send and
    wait for the reply), ``NotifyHumanSMS`` / ``…WhatsApp`` / ``…Slack`` / ``…Email``
    (send, don't wait), ``AskHumanChannel(channel_id)``, ``HumanForm``, ``CallHuman``,
    ``CheckHumanInteraction``: each an ``SdkMcpTool``, named, described and shaped as the
    LangChain and MCP tools; :func:`humanwire_server` serves them in-process.
Approvals (``humanwire.claude_agent_sdk.approval``)
    ``HumanApprovals``: ``can_use_tool`` and ``hooks()`` (or ``options()`` for both); with
    ``pause=True`` the hook defers and ``resume`` / ``resume_from_webhook`` go on.

Decisions (what the SDK leaves open, settled here)

- **Tool type.** An ``SdkMcpTool`` (what ``@tool`` makes) with the shared schema as its
  ``input_schema``: the CLI lists it to the model as ``mcp__<server>__<tool>``.
- **Errors, the MCP way.** Arguments that do not fit, a form designed badly, a service
  error: a result marked ``is_error`` saying ``humanwire: <reason>``; the run goes on. A
  person who does not answer in time is a normal result (the no-response text).
- **Approval on the SDK's seams.** ``can_use_tool`` (allow, or deny with the reason and
  the comment) and ``PreToolUse`` (``defer`` to pause). Approved calls are consumed on the
  service for the call's action right before they run.
- **The pause is the CLI's session.** A deferred call's session id and call are saved in
  a file store; the transcript stays where the CLI keeps it (``$HOME/.claude``): resume
  with the same HOME and cwd.
"""

from __future__ import annotations

from humanwire._extras import Extra
from humanwire._tool_kinds import TOOL_CLASS_NAMES

INSTALL_HINT = Extra(
    "humanwire.claude_agent_sdk",
    "claude-agent-sdk",
    "the Claude Agent SDK (claude-agent-sdk 0.2 or newer)",
    ("claude_agent_sdk",),
).require()

from .approval import (  # noqa: E402
    ASK_USER_QUESTION,
    CALL_KEY,
    RESUME_CLAUDE,
    SESSION_KEY,
    HumanApprovals,
    answer_for,
    run_session,
)
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import (  # noqa: E402
    DEFAULT_SERVER_NAME,
    HumanWireTool,
    allowed_tool_names,
    humanwire_server,
)

__all__ = [
    "ASK_USER_QUESTION",
    "CALL_KEY",
    "DEFAULT_SERVER_NAME",
    "INSTALL_HINT",
    "RESUME_CLAUDE",
    "SESSION_KEY",
    "HumanApprovals",
    "HumanWireTool",
    "allowed_tool_names",
    "answer_for",
    "humanwire_server",
    "run_session",
    *TOOL_CLASS_NAMES,
]
