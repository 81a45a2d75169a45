"""One side of the two-process durable approval test (``test_resume_any_process``), run
as its own interpreter: ``pause`` runs the graph on a SQLite checkpointer until the
approval interrupts and exits; ``resume`` is a webhook receiver that never saw the pause:
it verifies the delivery and resumes the thread from the event alone (no registry).

    python resume_process.py pause  DB BASE_URL API_KEY THREAD
    python resume_process.py resume DB BASE_URL API_KEY BODY_FILE SIGNATURE SECRET

Prints one JSON line: what happened.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from humanwire import HumanWire
from humanwire.approval import ApprovalRequest
from humanwire.langchain import ApprovalCheckpoint
from humanwire.webhooks import parse_event


class PostState(TypedDict, total=False):
    draft: str
    approval: dict[str, Any]
    published: bool


def ask(state: PostState) -> ApprovalRequest:
    return ApprovalRequest("publish_post", {"post": state["draft"]}, "Publish to the blog")


def graph(db: str, client: HumanWire) -> tuple[Any, ApprovalCheckpoint]:
    checkpoint = ApprovalCheckpoint(ask, client=client, wait_time=1, follow_up_time=120)

    def publish(state: PostState) -> PostState:
        return {"published": True}

    builder = StateGraph(PostState)
    builder.add_node("approve", checkpoint)
    builder.add_node("publish", publish)
    builder.add_edge(START, "approve")
    builder.add_conditional_edges(
        "approve", checkpoint.route, {"approved": "publish", "rejected": END}
    )
    builder.add_edge("publish", END)
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    return builder.compile(checkpointer=saver), checkpoint


def main(argv: list[str]) -> None:
    mode, db, base_url, api_key = argv[:4]
    client = HumanWire(api_key=api_key, base_url=base_url)
    compiled, checkpoint = graph(db, client)
    if mode == "pause":
        paused = compiled.invoke({"draft": "Hello"}, {"configurable": {"thread_id": argv[4]}})
        (pending,) = paused["__interrupt__"]
        print(json.dumps({"interaction_id": pending.value["interaction_id"]}))
        return
    body_file, signature, secret = argv[4:7]
    event = parse_event(Path(body_file).read_bytes(), signature=signature, secret=secret)
    final = checkpoint.resume_from_event(compiled, event)
    if final is None:
        print(json.dumps({"resumed": False}))
        return
    decision = checkpoint.decision(final)
    assert decision is not None
    print(
        json.dumps(
            {
                "resumed": True,
                "published": final.get("published", False),
                "approved": decision.approved,
                "comment": decision.comment,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
