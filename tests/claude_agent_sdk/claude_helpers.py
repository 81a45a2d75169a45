"""Helpers of the Claude Agent SDK adapter tests (a module name no other test folder
uses): a scripted model behind a fake Anthropic Messages API on 127.0.0.1, which the SDK's
bundled Claude Code CLI is pointed at (``ANTHROPIC_BASE_URL``): the real CLI, the real
control protocol, the real in-process MCP server; no model, no network.

What the model does next depends only on the conversation it is sent (how many tool-use
turns it holds already), so a session deferred in one process and resumed in another goes
on where it was."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Call = tuple[str, dict[str, Any]]


@dataclass
class ScriptedModel:
    """Plays ``turns`` of tool calls, one turn per model request, then answers
    ``FINAL: <text>`` of the last tool results (`` | `` between several). ``results``
    holds every tool result it was sent, in order. A tool named short (``send_payment``)
    is called by the name the CLI lists it under (``mcp__<server>__send_payment``)."""

    turns: list[list[Call]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    requests: int = 0

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for a Messages API request ``body``."""
        messages = body.get("messages") or []
        tools = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        if not tools:  # a side request of the CLI (a title, a summary): not the agent loop
            return _message([{"type": "text", "text": "ok"}], "end_turn")
        self.requests += 1
        made = sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            and any(_is(b, "tool_use") for b in _blocks(m.get("content")))
        )
        returned = [
            _result_text(b)
            for b in _blocks(messages[-1].get("content") if messages else None)
            if _is(b, "tool_result")
        ]
        self.results.extend(returned)
        if made < len(self.turns):
            calls = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{made}_{index}",
                    "name": _full_name(name, tools),
                    "input": arguments,
                }
                for index, (name, arguments) in enumerate(self.turns[made])
            ]
            return _message(calls, "tool_use")
        return _message([{"type": "text", "text": "FINAL: " + " | ".join(returned)}], "end_turn")


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in _blocks(content) if _is(b, "text"))


def _full_name(name: str, tools: list[str]) -> str:
    for listed in tools:
        if listed == name or (listed.startswith("mcp__") and listed.endswith(f"__{name}")):
            return listed
    return name


def _message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        # A fresh id each time: the CLI merges assistant messages that share one.
        "id": f"msg_{uuid.uuid4().hex}",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The message as the Messages API streams it (server-sent events)."""
    start = {**message, "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": opened,
            },
        )
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class FakeMessagesAPI:
    """``POST /v1/messages`` on 127.0.0.1, answered by ``model`` (streamed when asked)."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._json({"input_tokens": 1})
                    return
                with api.lock:
                    message = api.model.reply(body)
                if not body.get("stream"):
                    self._json(message)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for event, data in _events(message):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def _json(self, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeMessagesAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def scripted(*turns: Sequence[Call]) -> ScriptedModel:
    return ScriptedModel(turns=[list(turn) for turn in turns])


def once(name: str, arguments: dict[str, Any]) -> ScriptedModel:
    """A model that calls ``name`` once and answers with its result."""
    return scripted([(name, arguments)])


def cli_environment(base_url: str, home: Path) -> dict[str, str]:
    """The CLI's environment: the fake API, a scratch HOME (where it keeps transcripts;
    a resume needs the same), no telemetry, no updater, MCP tools listed up front."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-fake",
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ENABLE_TOOL_SEARCH": "false",
    }


def options(api: FakeMessagesAPI, directory: Path, **fields: Any) -> Any:
    """``ClaudeAgentOptions`` for the bundled CLI against ``api``: HOME and cwd under
    ``directory`` (the same in every process of a test: a resume reads the transcript
    there), a few turns at most, nothing from the developer's settings."""
    from claude_agent_sdk import ClaudeAgentOptions

    work = directory / "work"
    work.mkdir(parents=True, exist_ok=True)
    fields.setdefault("max_turns", 6)
    return ClaudeAgentOptions(
        env=cli_environment(api.base_url, directory / "home"),
        cwd=str(work),
        setting_sources=[],
        **fields,
    )


def pay_server(log: Path) -> Any:
    """An in-process MCP server ``pay`` of one tool, ``send_payment``, that appends to
    ``log`` each time it runs (what an approval gates: it must run once at most)."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    @tool("send_payment", "Send a payment", {"amount": int, "to": str})
    async def send_payment(args: dict[str, Any]) -> dict[str, Any]:
        with log.open("a", encoding="utf-8") as out:
            out.write(f"{args['amount']} {args['to']}\n")
        return {"content": [{"type": "text", "text": f"sent {args['amount']} to {args['to']}"}]}

    return create_sdk_mcp_server(name="pay", version="1.0.0", tools=[send_payment])


def ran(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []
