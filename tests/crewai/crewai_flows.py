"""The flows of the Flow tests, built per test (each test has its own account, so its own
provider), the same way in every process that pauses or resumes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crewai.flow import Flow, HumanFeedbackResult, human_feedback, listen, router, start

from humanwire.crewai import HumanWireFeedback, read_feedback


def payment_flow(provider: HumanWireFeedback, ledger: Path) -> type[Flow[Any]]:
    """Proposes paying bob 50, asks a person, pays (a line in ``ledger``) or stops.
    The router keeps what it read in the state: ``decision``, ``comment``,
    ``interaction_id``."""

    class PaymentFlow(Flow):  # type: ignore[type-arg]
        @start()
        @human_feedback(message="Approve paying bob $50?", provider=provider)
        def propose(self) -> dict[str, Any]:
            return {"amount": 50, "to": "bob"}

        @router(propose)
        def decide(self, result: HumanFeedbackResult) -> str:
            decision = read_feedback(result)
            self.state["decision"] = decision.decision
            self.state["comment"] = decision.comment
            self.state["interaction_id"] = decision.interaction_id
            return "approved" if decision.approved else "rejected"

        @listen("approved")
        def pay(self) -> str:
            amount, to = self.last_human_feedback.output["amount"], "bob"
            with ledger.open("a", encoding="utf-8") as paid:
                paid.write(f"{amount} {to}\n")
            return f"paid {amount} to {to}"

        @listen("rejected")
        def stop(self) -> str:
            return f"not paid: {read_feedback(self.last_human_feedback).text}"

    return PaymentFlow


def subject_flow(provider: HumanWireFeedback) -> type[Flow[Any]]:
    """Asks a person (a text question) for a report's subject line and uses the reply."""

    class SubjectFlow(Flow):  # type: ignore[type-arg]
        @start()
        @human_feedback(message="What subject line for the Q3 report?", provider=provider)
        def draft(self) -> str:
            return "Q3 report: revenue up 12%"

        @listen(draft)
        def publish(self, result: HumanFeedbackResult) -> str:
            return f"subject: {result.feedback or '(none)'}"

    return SubjectFlow
