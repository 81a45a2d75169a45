"""``humanwire demo``: an agent pipeline reaching a human through the embedded service.

A small LangGraph pipeline (no LLM needed) plans a team offsite:

1. it texts the human a question with the ``AskHumanSMS`` tool and waits for the reply;
2. it sends an approval request (``ApprovalCheckpoint``) for the booking it is about to make;
3. it books, or not, and prints what it got.

Answer in the inbox (the address is printed) or on the approval page, in your browser.
Nobody answering is not an error: the wait runs out, the agent gets the no-response text
and carries on (an unanswered approval is a rejection). ``--auto`` lets a scripted human
answer, so the demo also runs unattended.

Needs the ``langchain`` extra: ``pip install "humanwire[langchain]"``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO, TypedDict

from humanwire import HumanWire

QUESTION = "Hi! Which city should the team offsite be in this spring?"
DEFAULT_CITY = "Lisbon"
STAY_ONLINE = 60.0
"""Seconds the inbox stays online after the pipeline ended (its last decision read), when
a person plays the human."""


class OffsiteState(TypedDict, total=False):
    city: str
    reply: str
    approval: dict[str, Any]
    outcome: str


class Progress:
    """Shows, while a request is held, what reached the human and how long is left."""

    def __init__(self, client: HumanWire, out: TextIO) -> None:
        self.client = client
        self.out = out
        self._seen: set[str] = {d.id for d in client.sandbox.deliveries()}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def waiting(self, label: str, seconds: float) -> Progress:
        self._label, self._deadline = label, time.monotonic() + seconds
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.out.isatty():
            print("\r\033[K", end="", file=self.out, flush=True)

    def _run(self) -> None:
        last_line = -1.0
        while not self._stop.is_set():
            self._show_deliveries()
            left = max(0.0, self._deadline - time.monotonic())
            if self.out.isatty():
                print(
                    f"\r  … {self._label}: {left:4.0f} s left ", end="", file=self.out, flush=True
                )
            elif last_line < 0 or last_line - left >= 10:
                # Not a terminal (a log, a test): a line every 10 s instead of a live counter.
                self.say(f"  … {self._label}: {left:.0f} s left")
                last_line = left
            self._stop.wait(0.5)

    def _show_deliveries(self) -> None:
        for delivery in reversed(self.client.sandbox.deliveries()):
            if delivery.id in self._seen:
                continue
            self._seen.add(delivery.id)
            prefix = "\r\033[K" if self.out.isatty() else ""
            self.say(f"{prefix}  → {delivery.channel} to {delivery.to}: {delivery.text}")


def build_pipeline(
    client: HumanWire, wait_time: float, progress: Progress, follow_up_time: float | None = None
) -> tuple[Any, Any]:
    """The offsite pipeline: ask → approve → book. Returns (graph, checkpoint)."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from humanwire.approval import ApprovalRequest
    from humanwire.langchain import ApprovalCheckpoint, AskHumanSMS

    ask_tool = AskHumanSMS(client=client, wait_time=wait_time)
    checkpoint = ApprovalCheckpoint(
        lambda state: ApprovalRequest(
            "book_offsite",
            {"city": state["city"], "nights": 2, "budget_eur": 4800},
            description="The agent is about to book the team offsite.",
        ),
        client=client,
        wait_time=wait_time,
        follow_up_time=follow_up_time if follow_up_time is not None else max(60, wait_time),
    )

    def ask(state: OffsiteState) -> OffsiteState:
        with progress.waiting("waiting for the reply", wait_time):
            message = ask_tool.invoke(
                {
                    "type": "tool_call",
                    "id": "ask-1",
                    "name": ask_tool.name,
                    "args": {"message": QUESTION},
                }
            )
        text = str(message.content)
        progress.say(f"  ← {text}")
        reply = _reply_text(text)
        city = reply or DEFAULT_CITY
        if not reply:
            progress.say(f"  (no answer: the agent carries on with {city})")
        return {"city": city, "reply": text}

    def approve(state: OffsiteState, config: RunnableConfig) -> dict[str, Any]:
        with progress.waiting("waiting for the approval", wait_time):
            return checkpoint(state, config)

    def book(state: OffsiteState) -> OffsiteState:
        return {"outcome": f"Booked the offsite in {state['city']}."}

    def skip(state: OffsiteState) -> OffsiteState:
        decision = checkpoint.decision(state)
        why = decision.text if decision is not None else "no decision"
        return {"outcome": f"Did not book: {why}"}

    builder = StateGraph(OffsiteState)
    builder.add_node("ask", ask)
    builder.add_node("approve", approve)
    builder.add_node("book", book)
    builder.add_node("skip", skip)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "approve")
    builder.add_conditional_edges(
        "approve", checkpoint.route, {"approved": "book", "rejected": "skip"}
    )
    builder.add_edge("book", END)
    builder.add_edge("skip", END)
    return builder.compile(checkpointer=InMemorySaver()), checkpoint


def _reply_text(tool_text: str) -> str | None:
    prefix = "Human response: "
    if tool_text.startswith(prefix):
        return tool_text[len(prefix) :].strip() or None
    return None


def _script_auto_human(client: HumanWire) -> Callable[[], None]:
    from humanwire.testing import ScriptedHuman

    human = ScriptedHuman(client.base_url, client.api_key)
    human.reply("Lisbon", delay=1.0)
    human.decide_approval("approve", "Looks good, go ahead", delay=1.0)
    return human.close


def run(
    *,
    auto: bool = False,
    wait_time: float | None = None,
    follow_up_time: float | None = None,
    stay_online_for: float | None = None,
    out: TextIO = sys.stdout,
) -> str:
    """Runs the demo and returns the pipeline's outcome line. Played by a person (not
    ``auto``), the service then stays online ``stay_online_for`` seconds (default
    ``STAY_ONLINE``; Ctrl+C ends it sooner), so the page they are on still loads."""
    try:
        import langgraph  # noqa: F401
    except ImportError:
        raise SystemExit(
            'humanwire demo needs the langchain extra: pip install "humanwire[langchain]"'
        ) from None
    wait = wait_time if wait_time is not None else (20.0 if auto else 120.0)
    client = HumanWire()  # no base URL: the embedded service, started or joined
    progress = Progress(client, out)
    inbox = f"{client.base_url}/inbox?key={client.api_key}"
    progress.say("humanwire demo — an agent pipeline that needs a human")
    progress.say(f"  service: {client.base_url} (embedded, no account, no network)")
    progress.say(f"  inbox:   {inbox}")
    progress.say(
        "  Open the inbox to play the human: reply to the text, then open the approval page."
    )
    progress.say("")
    stop_human = _script_auto_human(client) if auto else None
    try:
        graph, checkpoint = build_pipeline(client, wait, progress, follow_up_time)
        config = {"configurable": {"thread_id": f"demo-{time.time_ns()}"}}
        progress.say("1. The agent asks by SMS:")
        state = graph.invoke({}, config)
        while "__interrupt__" in state:
            # Paused: the wait window closed, but the approval stays open in its follow-up
            # window. Resume from the service's status (a webhook would do this too).
            progress.say("  (paused: the approval is still open; waiting for it durably)")
            resumed = checkpoint.poll(graph, config, wait=30)
            if resumed is not None:
                state = resumed
        progress.say(f"2. Approval: {checkpoint.decision(state).text}")  # type: ignore[union-attr]
        progress.say(f"3. {state['outcome']}")
        if not auto:
            stay_online(progress, STAY_ONLINE if stay_online_for is None else stay_online_for)
        return str(state["outcome"])
    finally:
        if stop_human is not None:
            stop_human()
        client.close()


def stay_online(progress: Progress, seconds: float) -> None:
    """Keeps this process's embedded service serving ``seconds`` more (Ctrl+C ends it
    sooner): the human who just decided is on a page of it (the approval's thank-you
    page loads after the decision the pipeline already read), and stopping the service
    now would leave them on the browser's connection-refused page. Says when the inbox
    goes offline. A service of another process (``humanwire serve``) stays as it is."""
    from humanwire.server.runtime import embedded

    if not embedded.ensure_embedded_service().in_process:
        return
    progress.say("")
    progress.say(f"The inbox stays online for {seconds:.0f} s (Ctrl+C to stop it now).")
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C: offline now
        time.sleep(seconds)
    embedded.stop_embedded_service()
    progress.say("The inbox is offline: the demo's service stopped.")


def main(argv: list[str] | None = None, *, auto: bool | None = None) -> int:
    parser = argparse.ArgumentParser(prog="humanwire demo", description=__doc__.split("\n")[0])
    parser.add_argument("--auto", action="store_true", help="a scripted human answers")
    parser.add_argument("--wait", type=float, default=None, help="seconds each wait is held")
    parser.add_argument(
        "--stay-online",
        type=float,
        default=None,
        help=f"seconds the inbox stays online after the pipeline ends (default {STAY_ONLINE:.0f})",
    )
    args = parser.parse_args(argv if argv is not None else [])
    run(auto=bool(auto) or args.auto, wait_time=args.wait, stay_online_for=args.stay_online)
    return 0
