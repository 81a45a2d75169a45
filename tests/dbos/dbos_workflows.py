"""Workflows of tests/dbos (registered with DBOS when imported, before any launch)."""

from __future__ import annotations

from typing import Any

from dbos import DBOS

import humanwire.dbos as humanwire_dbos

HUMAN = "+12025550100"


@DBOS.workflow()
def ask_twice_on_one_topic(timeout: float) -> tuple[str, Any]:
    """Asks, then listens on the same topic again: a redelivered answer would show here."""
    answer = humanwire_dbos.ask(to=HUMAN, message="Ship v2 tonight?", timeout=timeout)
    steps = DBOS.list_workflow_steps(DBOS.workflow_id or "")
    (send,) = [step for step in steps if step["function_name"] == "humanwire.send_message"]
    again = DBOS.recv(humanwire_dbos.topic_of(send["output"]), timeout_seconds=3)
    return answer, again


@DBOS.workflow()
def ask_once(timeout: float) -> str:
    return humanwire_dbos.ask(to=HUMAN, message="Ship v2 tonight?", timeout=timeout)


@DBOS.workflow()
def form_then_call() -> tuple[dict[str, str] | str, str]:
    values = humanwire_dbos.form(
        to=HUMAN,
        title="Release notes",
        fields=[{"id": "note", "label": "Note", "type": "text"}],
        timeout=120,
    )
    summary = humanwire_dbos.call(to=HUMAN, prompt="Ask whether v2 may ship.", timeout=120)
    return values, summary


ACTION = {"name": "deploy", "arguments": {"version": "v2"}}


@DBOS.workflow()
def gated_deploy(quorum: int) -> tuple[str | None, bool, str]:
    """An approval with ``quorum`` approvers, consumed once before the gated step."""
    decision = humanwire_dbos.approval(
        title="Deploy v2",
        approvers=[{"channel": "sms", "to": HUMAN}, {"channel": "sms", "to": "+12025550101"}],
        action=ACTION,
        quorum=quorum,
        timeout=120,
    )
    if not decision.approved:
        return decision.decision, False, decision.text
    consumed = humanwire_dbos.consume(decision)
    return decision.decision, consumed, decision.text


@DBOS.workflow()
def undecided_approval(on_timeout: str) -> tuple[str | None, bool, str]:
    decision = humanwire_dbos.approval(
        title="Deploy v2",
        approvers=[{"channel": "sms", "to": HUMAN}],
        timeout=1.2,  # the service listens 2 s (whole seconds): it decides past the deadline
        on_timeout=on_timeout,  # type: ignore[arg-type]
    )
    return decision.decision, decision.timed_out, decision.text


# -- async workflows: the *_async helpers (async steps, DBOS.recv_async) --------------------


@DBOS.workflow()
async def ask_once_async(timeout: float) -> str:
    return await humanwire_dbos.ask_async(to=HUMAN, message="Ship v2 tonight?", timeout=timeout)


@DBOS.workflow()
async def form_then_call_async() -> tuple[dict[str, str] | str, str]:
    values = await humanwire_dbos.form_async(
        to=HUMAN,
        title="Release notes",
        fields=[{"id": "note", "label": "Note", "type": "text"}],
        timeout=120,
    )
    summary = await humanwire_dbos.call_async(
        to=HUMAN, prompt="Ask whether v2 may ship.", timeout=120
    )
    return values, summary


@DBOS.workflow()
async def gated_deploy_async(quorum: int) -> tuple[str | None, bool, str]:
    decision = await humanwire_dbos.approval_async(
        title="Deploy v2",
        approvers=[{"channel": "sms", "to": HUMAN}, {"channel": "sms", "to": "+12025550101"}],
        action=ACTION,
        quorum=quorum,
        timeout=120,
    )
    if not decision.approved:
        return decision.decision, False, decision.text
    consumed = await humanwire_dbos.consume_async(decision)
    return decision.decision, consumed, decision.text
