"""The Adaptive Cards (version 1.5, as Teams renders them) the fake holds a bot's cards
to: the card, the elements and actions a bot of this kind sends, written from the
Adaptive Cards schema explorer (adaptivecards.io/explorer), **strictly** as the Connector
description is held: a property the element does not have is refused (Teams would drop
``isMultiLine`` and render a single line), and so is an element or action of a type not
listed here. Beyond the schema: every input has an id, and no two share one (Teams
merges the inputs' values into the action's ``data`` by id)."""

from __future__ import annotations

from typing import Any

from .._schema import SchemaCheck

__all__ = ["CARD_CONTENT_TYPE", "CARD_SCHEMA", "CardCheck"]

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"

_SPACING = {"enum": ["default", "none", "small", "medium", "large", "extraLarge", "padding"]}
_ELEMENT: dict[str, Any] = {
    "id": {"type": "string"},
    "isVisible": {"type": "boolean"},
    "separator": {"type": "boolean"},
    "spacing": _SPACING,
    "height": {"enum": ["auto", "stretch"]},
    "requires": {"type": "object"},
    "fallback": {},
}
_INPUT: dict[str, Any] = {
    **_ELEMENT,
    "id": {"type": "string", "minLength": 1},
    "label": {"type": "string"},
    "isRequired": {"type": "boolean"},
    "errorMessage": {"type": "string"},
}
_ACTION: dict[str, Any] = {
    "id": {"type": "string"},
    "title": {"type": "string"},
    "iconUrl": {"type": "string"},
    "style": {"enum": ["default", "positive", "destructive"]},
    "tooltip": {"type": "string"},
    "isEnabled": {"type": "boolean"},
    "mode": {"enum": ["primary", "secondary"]},
    "requires": {"type": "object"},
    "fallback": {},
}


def _kind(name: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> Any:
    return {
        "type": "object",
        "required": ["type", *required],
        "properties": {"type": {"const": name}, **properties},
        "additionalProperties": False,
    }


_TEXT_BLOCK = _kind(
    "TextBlock",
    {
        **_ELEMENT,
        "text": {"type": "string"},
        "color": {"enum": ["default", "dark", "light", "accent", "good", "warning", "attention"]},
        "fontType": {"enum": ["default", "monospace"]},
        "horizontalAlignment": {"enum": ["left", "center", "right"]},
        "isSubtle": {"type": "boolean"},
        "maxLines": {"type": "integer", "minimum": 1},
        "size": {"enum": ["default", "small", "medium", "large", "extraLarge"]},
        "weight": {"enum": ["default", "lighter", "bolder"]},
        "wrap": {"type": "boolean"},
        "style": {"enum": ["default", "heading"]},
    },
    ("text",),
)
_INPUT_TEXT = _kind(
    "Input.Text",
    {
        **_INPUT,
        "isMultiline": {"type": "boolean"},
        "maxLength": {"type": "integer", "minimum": 1},
        "placeholder": {"type": "string"},
        "regex": {"type": "string"},
        "style": {"enum": ["text", "tel", "url", "email", "password"]},
        "value": {"type": "string"},
        "inlineAction": {"type": "object"},
    },
    ("id",),
)
_CHOICE = {
    "type": "object",
    "required": ["title", "value"],
    "properties": {
        "type": {"const": "Input.Choice"},
        "title": {"type": "string"},
        "value": {"type": "string"},
    },
    "additionalProperties": False,
}
_INPUT_CHOICE_SET = _kind(
    "Input.ChoiceSet",
    {
        **_INPUT,
        "choices": {"type": "array", "items": _CHOICE},
        "isMultiSelect": {"type": "boolean"},
        "style": {"enum": ["compact", "expanded", "filtered"]},
        "placeholder": {"type": "string"},
        "value": {"type": "string"},
        "wrap": {"type": "boolean"},
    },
    ("id", "choices"),
)
_INPUT_TOGGLE = _kind(
    "Input.Toggle",
    {
        **_INPUT,
        "title": {"type": "string"},
        "value": {"type": "string"},
        "valueOn": {"type": "string"},
        "valueOff": {"type": "string"},
        "wrap": {"type": "boolean"},
    },
    ("id", "title"),
)
_EXECUTE = _kind(
    "Action.Execute",
    {
        **_ACTION,
        "verb": {"type": "string"},
        "data": {"type": ["object", "string"]},
        "associatedInputs": {"enum": ["auto", "none"]},
    },
)
_SUBMIT = _kind(
    "Action.Submit",
    {
        **_ACTION,
        "data": {"type": ["object", "string"]},
        "associatedInputs": {"enum": ["auto", "none"]},
    },
)
_OPEN_URL = _kind(
    "Action.OpenUrl", {**_ACTION, "url": {"type": "string", "minLength": 1}}, ("url",)
)

ELEMENTS: dict[str, Any] = {
    "TextBlock": _TEXT_BLOCK,
    "Input.Text": _INPUT_TEXT,
    "Input.ChoiceSet": _INPUT_CHOICE_SET,
    "Input.Toggle": _INPUT_TOGGLE,
}
"""The body's elements the fake knows, by type."""
ACTIONS: dict[str, Any] = {
    "Action.Execute": _EXECUTE,
    "Action.Submit": _SUBMIT,
    "Action.OpenUrl": _OPEN_URL,
}
"""The card's actions the fake knows, by type."""
_TYPED = {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}

CARD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "version"],
    "properties": {
        "type": {"const": "AdaptiveCard"},
        "$schema": {"type": "string"},
        "version": {"enum": ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5"]},
        "body": {"type": "array", "items": _TYPED},
        "actions": {"type": "array", "items": _TYPED},
        "fallbackText": {"type": "string"},
        "speak": {"type": "string"},
        "lang": {"type": "string"},
        "minHeight": {"type": "string"},
        "rtl": {"type": "boolean"},
        "verticalContentAlignment": {"enum": ["top", "center", "bottom"]},
        "refresh": {"type": "object"},
        "msteams": {"type": "object"},
        "metadata": {"type": "object"},
    },
    "additionalProperties": False,
}
"""Adaptive Card 1.5, the part of it the fake knows (Draft 7): the card itself; each
element and action is held to its type's schema (``ELEMENTS``, ``ACTIONS``)."""


class CardCheck:
    """Why a card is not one Teams renders as sent (None: it is)."""

    def __init__(self) -> None:
        from jsonschema import Draft7Validator

        self._checks = SchemaCheck(Draft7Validator)

    def problem(self, card: Any) -> str | None:
        if not isinstance(card, dict):
            return "the Adaptive Card: not an object"
        found = self._checks.problem(CARD_SCHEMA, card)
        if found is not None:
            return f"the Adaptive Card: {found}"
        for part, known in (("body", ELEMENTS), ("actions", ACTIONS)):
            for index, item in enumerate(card.get(part) or ()):
                schema = known.get(item["type"])
                where = f"the Adaptive Card: {part}/{index}"
                if schema is None:
                    return f"{where}: an unknown type {item['type']!r}"
                found = self._checks.problem(schema, item)
                if found is not None:
                    inner, _, message = found.partition(": ")
                    return f"{where}: {message}" if inner == "(body)" else f"{where}/{found}"
        seen: set[str] = set()
        for element in card.get("body") or ():
            if not str(element.get("type", "")).startswith("Input."):
                continue
            if element["id"] in seen:
                return f"the Adaptive Card: two inputs have the id {element['id']!r}"
            seen.add(element["id"])
        return None
