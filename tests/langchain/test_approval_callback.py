"""Human approval of tool calls through the callback handler and the decorator, against
the real service: an approval request per call, approved or rejected on its page (the link
the approver's text carries), timing out, and consumed once: a re-run of the same tool
call does not run the tool again."""

from __future__ import annotations

import inspect
from typing import Any

import httpx
import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from lc_helpers import properties

from approval_support import approval_link, decide_next
from humanwire import AsyncHumanWire, HumanWire
from humanwire.langchain import ApprovalRejected, HumanApprovalCallbackHandler, require_approval


def make_tools(log: list[str]) -> tuple[BaseTool, BaseTool]:
    @tool
    def delete_file(path: str, force: bool = False) -> str:
        """Delete a file."""
        log.append(path)
        return f"deleted {path}"

    @tool
    def list_files(folder: str) -> str:
        """List files."""
        log.append(f"ls {folder}")
        return "a.txt"

    return delete_file, list_files


def test_approve_runs_the_tool(humanwire_client: HumanWire) -> None:
    log: list[str] = []
    delete_file, _ = make_tools(log)
    decide_next(humanwire_client, "approve")
    handler = HumanApprovalCallbackHandler(
        client=humanwire_client, tools=["delete_file"], wait_time=5
    )
    result = delete_file.invoke({"path": "/srv/old.log"}, config={"callbacks": [handler]})
    assert result == "deleted /srv/old.log"
    assert log == ["/srv/old.log"]
    (decision,) = handler.decisions
    assert decision.approved and decision.decision == "approve" and not decision.timed_out


def test_reject_with_comment_stops_the_tool(humanwire_client: HumanWire) -> None:
    log: list[str] = []
    delete_file, _ = make_tools(log)
    decide_next(humanwire_client, "reject", "That log is still needed")
    handler = HumanApprovalCallbackHandler(
        client=humanwire_client, tools=["delete_file"], wait_time=5
    )
    with pytest.raises(ApprovalRejected, match="That log is still needed") as caught:
        delete_file.invoke({"path": "/srv/old.log"}, config={"callbacks": [handler]})
    assert log == []
    assert caught.value.decision.decision == "reject"
    assert caught.value.decision.timed_out is False
    assert "a human rejected it" in str(caught.value)


def test_timeout_rejects_by_default_and_says_so(humanwire_client: HumanWire) -> None:
    log: list[str] = []
    delete_file, _ = make_tools(log)
    handler = HumanApprovalCallbackHandler(
        client=humanwire_client, tools=["delete_file"], wait_time=1
    )
    with pytest.raises(ApprovalRejected, match="timeout") as caught:
        delete_file.invoke({"path": "/srv/old.log"}, config={"callbacks": [handler]})
    assert log == []
    assert caught.value.decision.timed_out is True
    assert caught.value.decision.decision == "timeout"
    assert "a human rejected it" not in str(caught.value)

    # The request was about this call: its page shows it readably.
    (delivery,) = humanwire_client.sandbox.deliveries()
    page = httpx.get(approval_link(delivery.text) or "", timeout=5).text
    assert "Approve delete_file?" in page
    assert "delete_file" in page and "/srv/old.log" in page


def test_timeout_can_default_to_approve(humanwire_client: HumanWire) -> None:
    log: list[str] = []
    delete_file, _ = make_tools(log)
    handler = HumanApprovalCallbackHandler(
        client=humanwire_client, wait_time=1, default_on_timeout="approve"
    )
    assert delete_file.invoke({"path": "/x"}, config={"callbacks": [handler]}) == "deleted /x"
    assert handler.decisions[0].timed_out and handler.decisions[0].approved


def test_unguarded_tools_run_without_asking(humanwire_client: HumanWire) -> None:
    log: list[str] = []
    _, list_files = make_tools(log)
    handler = HumanApprovalCallbackHandler(
        client=humanwire_client,
        tools=lambda name, args: name == "delete_file",
        wait_time=5,
    )
    assert list_files.invoke({"folder": "/srv"}, config={"callbacks": [handler]}) == "a.txt"
    assert handler.decisions == []
    assert humanwire_client.sandbox.deliveries() == []


async def test_async_invoke_approve_and_reject(humanwire_client: HumanWire) -> None:
    log: list[str] = []
    delete_file, _ = make_tools(log)
    handler = HumanApprovalCallbackHandler(
        client=humanwire_client, tools=["delete_file"], wait_time=5
    )
    decide_next(humanwire_client, "approve")
    assert await delete_file.ainvoke({"path": "/a"}, config={"callbacks": [handler]}) == (
        "deleted /a"
    )
    decide_next(humanwire_client, "reject", "no")
    with pytest.raises(ApprovalRejected, match="no"):
        await delete_file.ainvoke({"path": "/b"}, config={"callbacks": [handler]})
    assert log == ["/a"]


def test_handler_is_sync_raises_and_resolves_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    # Made at import time with nothing configured, it builds its approver on first use.
    monkeypatch.setenv("HUMANWIRE_BASE_URL", "https://humanwire.example.com")
    handler = HumanApprovalCallbackHandler(wait_time=5)
    assert handler.raise_error is True
    assert not inspect.iscoroutinefunction(handler.on_tool_start)
    with pytest.raises(ValueError, match="HUMANWIRE_SMS_TO"):
        _ = handler.approver


# --- the decorator --------------------------------------------------------------------------
def test_decorated_function_approved_and_rejected(humanwire_client: HumanWire) -> None:
    paid: list[tuple[int, str]] = []

    @require_approval(client=humanwire_client, wait_time=5, description="Pays a supplier")
    def pay(amount: int, to: str = "ACME") -> str:
        paid.append((amount, to))
        return "paid"

    decide_next(humanwire_client, "approve")
    assert pay(120) == "paid"

    decide_next(humanwire_client, "reject", "Wrong supplier")
    with pytest.raises(ApprovalRejected, match="Wrong supplier"):
        pay(99, to="EVIL")
    assert paid == [(120, "ACME")]


def test_decorated_function_form_shows_description_and_arguments(
    humanwire_client: HumanWire,
) -> None:
    @require_approval(client=humanwire_client, wait_time=1, description="Pays a supplier")
    def pay(amount: int, to: str = "ACME", **extra: str) -> str:
        return "paid"

    with pytest.raises(ApprovalRejected, match="timeout"):
        pay(120, memo="May invoice")
    (delivery,) = humanwire_client.sandbox.deliveries()
    page = httpx.get(approval_link(delivery.text) or "", timeout=5).text
    for shown in ("Approve pay?", "Pays a supplier", "120", "ACME", "memo", "May invoice"):
        assert shown in page


async def test_decorated_async_function_uses_the_async_client(
    async_humanwire_client: AsyncHumanWire, humanwire_client: HumanWire
) -> None:
    calls: list[str] = []

    @require_approval(client=async_humanwire_client, wait_time=5)
    async def restart(service: str) -> str:
        calls.append(service)
        return "restarted"

    decide_next(humanwire_client, "approve")
    assert await restart("db") == "restarted"
    with pytest.raises(ApprovalRejected, match="timeout"):
        await require_approval(client=async_humanwire_client, wait_time=1)(restart)("web")
    assert calls == ["db"]


def test_decorated_tool_is_a_guarded_copy(humanwire_client: HumanWire) -> None:
    log: list[str] = []
    delete_file, _ = make_tools(log)
    guarded = require_approval(client=humanwire_client, wait_time=5)(delete_file)
    assert isinstance(guarded, BaseTool) and guarded.name == "delete_file"
    decide_next(humanwire_client, "reject", "no")
    with pytest.raises(ApprovalRejected):
        guarded.invoke({"path": "/etc/passwd"})
    assert log == []
    # The original tool is left unguarded.
    assert delete_file.invoke({"path": "/tmp/a"}) == "deleted /tmp/a"


def test_decorator_under_tool_makes_rejection_an_error_message(humanwire_client: HumanWire) -> None:
    @tool
    @require_approval(client=humanwire_client, wait_time=5)
    def drop_table(table: str) -> str:
        """Drop a database table."""
        return f"dropped {table}"

    drop_table.handle_tool_error = True
    assert properties(drop_table) == {"table"}
    decide_next(humanwire_client, "reject", "Production data")
    message = drop_table.invoke(
        {"type": "tool_call", "name": "drop_table", "id": "c1", "args": {"table": "users"}}
    )
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    assert "Production data" in message.content


def _agent_run(model_turns: list[Any], tools: list[BaseTool], handler: Any) -> dict[str, Any]:
    from langchain.agents import create_agent
    from lc_helpers import scripted_model

    agent = create_agent(scripted_model(*model_turns), tools=tools)
    result: dict[str, Any] = agent.invoke(
        {"messages": [{"role": "user", "content": "clean up"}]},
        config={"callbacks": [handler]},
    )
    return result


def _tool_results(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def test_a_rejection_inside_an_agent_reaches_the_model_with_the_comment(
    humanwire_client: HumanWire,
) -> None:
    from langchain_core.messages import AIMessage

    log: list[str] = []
    delete_file, list_files = make_tools(log)
    call = {"name": "delete_file", "args": {"path": "/srv/db"}, "id": "c1"}
    handler = HumanApprovalCallbackHandler(
        client=humanwire_client, tools=["delete_file"], wait_time=5
    )
    decide_next(humanwire_client, "reject", "That is the database")
    turns = [AIMessage(content="", tool_calls=[call]), AIMessage(content="ok, I left it")]
    result = _agent_run(turns, [delete_file, list_files], handler)
    # The run goes on: the model reads why the tool did not run, comment included.
    (message,) = _tool_results(result)
    assert message.tool_call_id == "c1" and message.status == "error"
    assert "a human rejected it" in str(message.content)
    assert "That is the database" in str(message.content)
    assert result["messages"][-1].content == "ok, I left it"
    assert log == []


def test_runs_reusing_a_call_id_are_each_asked(humanwire_client: HumanWire) -> None:
    """Models and fakes reuse ids like ``call_1``: a new run, the same call id and the same
    tool, is a new question (not run 1's rejection replayed); another tool under the id
    is asked too (not refused as a different request under a used key)."""
    from langchain_core.messages import AIMessage

    log: list[str] = []
    delete_file, list_files = make_tools(log)
    handler = HumanApprovalCallbackHandler(client=humanwire_client, wait_time=5)
    delete = {"name": "delete_file", "args": {"path": "/a"}, "id": "call_1"}
    listing = {"name": "list_files", "args": {"folder": "/srv"}, "id": "call_1"}

    def run(call: dict[str, Any]) -> ToolMessage:
        turns = [AIMessage(content="", tool_calls=[call]), AIMessage(content="done")]
        (message,) = _tool_results(_agent_run(turns, [delete_file, list_files], handler))
        return message

    decide_next(humanwire_client, "reject", "not today")
    assert "not today" in str(run(delete).content)
    decide_next(humanwire_client, "approve")
    assert run(delete).content == "deleted /a"
    decide_next(humanwire_client, "approve")
    assert run(listing).content == "a.txt"
    assert log == ["/a", "ls /srv"]
    assert len(humanwire_client.sandbox.deliveries()) == 3
    assert [d.decision for d in handler.decisions] == ["reject", "approve", "approve"]


def test_a_service_error_on_the_approval_path_is_told_to_the_model(
    humanwire_service: Any,
) -> None:
    """A bad key (or an unreachable service): nothing runs, and the model reads that its
    approval could not be requested, through the callback and the decorator alike."""
    from langchain_core.messages import AIMessage

    wrong = HumanWire(base_url=humanwire_service.base_url, api_key="hw_wrong_key")
    log: list[str] = []
    delete_file, list_files = make_tools(log)
    handler = HumanApprovalCallbackHandler(client=wrong, to="+12025550100", wait_time=5)
    call = {"name": "delete_file", "args": {"path": "/a"}, "id": "c1"}
    turns = [AIMessage(content="", tool_calls=[call]), AIMessage(content="stopped")]
    (message,) = _tool_results(_agent_run(turns, [delete_file, list_files], handler))
    assert message.status == "error"
    assert "delete_file was not run: its approval could not be requested" in str(message.content)
    assert log == []

    @tool
    @require_approval(client=wrong, to="+12025550100", wait_time=5)
    def drop_table(table: str) -> str:
        """Drop a database table."""
        log.append(table)
        return f"dropped {table}"

    drop_table.handle_tool_error = True

    reply = drop_table.invoke(
        {"type": "tool_call", "name": "drop_table", "id": "c2", "args": {"table": "users"}}
    )
    assert isinstance(reply, ToolMessage) and reply.status == "error"
    assert "drop_table was not run: its approval could not be requested" in str(reply.content)
    assert log == []


def test_a_rerun_of_the_same_graph_task_asks_once(humanwire_client: HumanWire) -> None:
    log: list[str] = []
    delete_file, _ = make_tools(log)
    decide_next(humanwire_client, "approve", "once is enough")
    handler = HumanApprovalCallbackHandler(
        client=humanwire_client, tools=["delete_file"], wait_time=5
    )
    call = {"type": "tool_call", "id": "call-42", "name": "delete_file", "args": {"path": "/a"}}
    # What LangGraph tells the callbacks of a task's tool call: its thread and task.
    task = {"thread_id": "t-1", "langgraph_checkpoint_ns": "tools:6d1c"}
    config: Any = {"callbacks": [handler], "metadata": task}
    first = delete_file.invoke(call, config=config)
    assert first.content == "deleted /a"
    # The task run again (a retried step, a resumed graph) gets the first request's
    # decision back (one text reached the human), but its approval is used: the tool
    # does not run again.
    with pytest.raises(ApprovalRejected, match="not run again") as caught:
        delete_file.invoke(call, config=config)
    assert log == ["/a"]
    assert caught.value.decision.decision == "consumed"
    assert len(humanwire_client.sandbox.deliveries()) == 1
    assert [d.decision for d in handler.decisions] == ["approve", "consumed"]
    # Another thread's call under the same id is another question.
    decide_next(humanwire_client, "reject")
    other: Any = {"callbacks": [handler], "metadata": {**task, "thread_id": "t-2"}}
    with pytest.raises(ApprovalRejected):
        delete_file.invoke(call, config=other)
    assert len(humanwire_client.sandbox.deliveries()) == 2
