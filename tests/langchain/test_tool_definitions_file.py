"""``tests/tool_definitions.json`` is what a model reads of the LangChain tools (name,
description, plain argument schema) for a set of constructions: the reference the
adapters tested in environments without LangChain (``tests/strands``, run apart by
``scripts/test-isolated``) check their tools against. This test keeps the file true to
LangChain; after a deliberate change of a tool's text or schema, rewrite it with
``HUMANWIRE_WRITE_TOOL_DEFINITIONS=1 pytest tests/langchain/test_tool_definitions_file.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel

from humanwire import HumanWire
from humanwire import langchain as lc
from humanwire._tooling import plain_json_schema
from humanwire.types import FormField

DEFINITIONS = Path(__file__).resolve().parents[1] / "tool_definitions.json"

REMOTE = HumanWire(api_key="k", base_url="https://humanwire.example")
"""A remote base URL: nothing is sent, no embedded service starts, no default human."""
TO = {"to": "+14155550123"}
SLACK_TO = {"to": "U0TEAM0001"}
EMAIL_TO = {"to": "ada@example.com"}
TELEGRAM_TO = {"to": "123456789"}
TEAMS_TO = {"to": "29:1a2b3c"}
DISCORD_TO = {"to": "80351110224678912"}
FIELDS = [{"id": "venue", "label": "Venue", "type": "text", "required": True}]

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("ask sms", "AskHumanSMS", {**TO, "wait_time": 120}),
    ("ask whatsapp", "AskHumanWhatsApp", TO),
    ("ask slack", "AskHumanSlack", SLACK_TO),
    ("ask email", "AskHumanEmail", EMAIL_TO),
    ("email exposed", "AskHumanEmail", {**EMAIL_TO, "expose_recipient": True}),
    ("ask exposed", "AskHumanSMS", {**TO, "expose_recipient": True}),
    ("slack exposed", "AskHumanSlack", {**SLACK_TO, "expose_recipient": True}),
    ("notify sms", "NotifyHumanSMS", TO),
    ("notify whatsapp", "NotifyHumanWhatsApp", TO),
    ("notify slack", "NotifyHumanSlack", SLACK_TO),
    ("notify email", "NotifyHumanEmail", EMAIL_TO),
    ("ask telegram", "AskHumanTelegram", TELEGRAM_TO),
    ("telegram exposed", "AskHumanTelegram", {**TELEGRAM_TO, "expose_recipient": True}),
    ("notify telegram", "NotifyHumanTelegram", TELEGRAM_TO),
    ("telegram form", "HumanForm", {**TELEGRAM_TO, "channel": "telegram"}),
    ("ask teams", "AskHumanTeams", TEAMS_TO),
    ("teams exposed", "AskHumanTeams", {**TEAMS_TO, "expose_recipient": True}),
    ("notify teams", "NotifyHumanTeams", TEAMS_TO),
    ("teams form", "HumanForm", {**TEAMS_TO, "channel": "teams"}),
    ("ask discord", "AskHumanDiscord", DISCORD_TO),
    ("discord exposed", "AskHumanDiscord", {**DISCORD_TO, "expose_recipient": True}),
    ("notify discord", "NotifyHumanDiscord", DISCORD_TO),
    ("discord form", "HumanForm", {**DISCORD_TO, "channel": "discord"}),
    ("ask person", "AskHumanPerson", {"person": "per_ada"}),
    ("person moving on", "AskHumanPerson", {"person": "per_ada", "fallback_after": 120}),
    ("person exposed", "AskHumanPerson", {"person": "per_ada", "expose_recipient": True}),
    ("notify person", "NotifyHumanPerson", {"person": "per_ada"}),
    ("sms to a person", "AskHumanSMS", {"person": "per_ada"}),
    ("form to a person", "HumanForm", {"person": "per_ada", "channel": "email"}),
    ("channel card", "AskHumanChannel", {"channel_id": "ch_1"}),
    ("dynamic form", "HumanForm", TO),
    ("whatsapp form", "HumanForm", {**TO, "channel": "whatsapp"}),
    ("slack form exposed", "HumanForm", {**SLACK_TO, "channel": "slack", "expose_recipient": True}),
    ("fixed form", "HumanForm", {**TO, "title": "Offsite", "fields": FIELDS}),
    ("form no wait", "HumanForm", {**TO, "wait_time": None, "follow_up_time": 60}),
    ("call", "CallHuman", TO),
    ("call exposed", "CallHuman", {**TO, "expose_recipient": True}),
    ("call no wait", "CallHuman", {**TO, "wait_for_call_end": False}),
    ("check", "CheckHumanInteraction", {}),
]


def build_options(options: dict[str, Any]) -> dict[str, Any]:
    """The constructor's keyword arguments: form fields as ``FormField`` objects."""
    built = dict(options)
    if "fields" in built:
        built["fields"] = [FormField.model_validate(field) for field in built["fields"]]
    return built


def definition(tool: BaseTool) -> dict[str, Any]:
    schema = tool.args_schema
    assert isinstance(schema, type) and issubclass(schema, BaseModel)
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": plain_json_schema(schema),
    }


def langchain_definitions() -> dict[str, Any]:
    cases = []
    for case, tool, options in CASES:
        built = getattr(lc, tool)(client=REMOTE, **build_options(options))
        cases.append({"case": case, "tool": tool, "options": options, **definition(built)})
    return {
        "about": "What a model reads of the LangChain tools; written by "
        "tests/langchain/test_tool_definitions_file.py",
        "cases": cases,
    }


def test_the_reference_file_is_what_langchain_shows_a_model() -> None:
    expected = langchain_definitions()
    if os.environ.get("HUMANWIRE_WRITE_TOOL_DEFINITIONS") == "1":
        DEFINITIONS.write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    saved = json.loads(DEFINITIONS.read_text(encoding="utf-8"))
    assert saved == expected, (
        "tests/tool_definitions.json differs from the LangChain tools: rewrite it with "
        "HUMANWIRE_WRITE_TOOL_DEFINITIONS=1 (see this module's docstring)"
    )
