"""humanwire for Agno (``pip install "humanwire[agno]"``).

Tools an agent gets in ``tools=[...]``, and people answering Agno's own pauses
(``requires_confirmation``, ``requires_user_input``, ``external_execution``), in the run
or after a pause, in any process sharing the agent's db. Everything goes through the core
client; nothing here speaks HTTP::

    from agno.agent import Agent
    from agno.tools import tool
    from humanwire.agno import AskHumanSMS, HumanForm, HumanRuns

    @tool(requires_confirmation=True)
    def refund(order_id: str, amount: float) -> str: ...

    agent = Agent(model=model, tools=[AskHumanSMS(), HumanForm(), refund])
    result = await HumanRuns().arun(agent, "Refund order 1042")

Tools (``humanwire.agno.tools``)
    ``AskHumanSMS``, ``AskHumanWhatsApp``, ``AskHumanSlack``, ``AskHumanEmail`` (send and
    wait for the reply), ``NotifyHumanSMS`` / ``…WhatsApp`` / ``…Slack`` / ``…Email``
    (send, don't wait), ``AskHumanChannel(channel_id)``, ``HumanForm``, ``CallHuman``,
    ``CheckHumanInteraction``: each an Agno ``Toolkit`` of one function, named,
    described and shaped as the LangChain and MCP tools.
Pauses (``humanwire.agno.runs``)
    ``HumanRuns``: ``arun`` / ``run_sync`` answer each pause in the run; ``start`` sends
    and returns the paused run; ``resume`` / ``resume_from_webhook`` continue it with
    ``continue_run`` from Agno's db (``SqliteDb``, ``PostgresDb``) in any process.

Decisions (what Agno leaves open, settled here)

- **Tool type.** A ``Toolkit`` of one ``Function`` with the shared schema as its
  ``parameters`` (``skip_entrypoint_processing``): the schema a model reads is exactly
  the shared one, arguments are validated by the same pydantic models, and the toolkit
  gives Agno a sync entrypoint (``agent.run``) and an async one (``agent.arun``).
- **Errors, the Agno way.** Arguments that do not fit, a form designed badly, a service
  error: the tool raises ``HumanWireToolError("humanwire: <reason>")``; Agno hands the
  model that text as the failed call's result and the run goes on. A person who does not
  answer in time is a normal result (the no-response text).
- **Approval on Agno's seam.** A tool marked ``requires_confirmation`` pauses the run;
  its approval goes out by ``POST /approvals``; approved, the approval is consumed on
  the service for the call as asked and the requirement confirmed; rejected (or timed
  out), the requirement is rejected with the reason and the person's comment as its
  note, which the model reads. An approval that cannot be requested rejects the call.
- **Input and external execution.** ``requires_user_input``: a question per missing
  field, the reply its value (no reply in time: the call is rejected, never run with a
  made-up value). ``external_execution``: a question whose reply (or the no-response
  text) is the tool's result.
- **The pause lives in Agno's db.** Sends carry ``humanwire_resume: agno``, the run id,
  session id and tool call id; their Idempotency-Keys derive from the run, the call and
  the action's digest, so a resume in another process finds the same interactions.
"""

from __future__ import annotations

from humanwire._extras import Extra
from humanwire._tool_kinds import TOOL_CLASS_NAMES

INSTALL_HINT = Extra("humanwire.agno", "agno", "Agno (agno 3.1.10 or newer)", ("agno",)).require()

from .runs import (  # noqa: E402
    CALL_KEY,
    RESUME_AGNO,
    RUN_KEY,
    SESSION_KEY,
    HumanRuns,
    Question,
    questions_of,
)
from .tools import *  # noqa: E402, F403 (the tool table's classes)
from .tools import HumanWireTool, HumanWireToolError  # noqa: E402

__all__ = [
    "CALL_KEY",
    "INSTALL_HINT",
    "RESUME_AGNO",
    "RUN_KEY",
    "SESSION_KEY",
    "HumanRuns",
    "HumanWireTool",
    "HumanWireToolError",
    "Question",
    "questions_of",
    *TOOL_CLASS_NAMES,
]
