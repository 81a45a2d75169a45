"""Meta's published description of the WhatsApp Cloud API (facebook/openapi
``business-messaging-api_v23.0.yaml``, MIT, licence beside it), used to refuse what Meta
would refuse and to check the webhooks the fake sends.

``whatsapp_business_messaging_v23.subset.json`` keeps ``sendMessage`` and the webhook
payload (``POST /whatsapp/webhooks``) with the schemas they reference, unmodified. The
description contradicts its own examples in two places (its ``info.x-known-defects``),
patched here when it is loaded:

1. The message schemas (``TextMessage``, ``InteractiveMessage``, …) are ``allOf`` of the
   shared base and a branch with ``additionalProperties: false``, so every real send
   (which carries the base's ``messaging_product``, ``recipient_type``, ``to``) fails.
   The branch's ``additionalProperties`` is dropped and ``unevaluatedProperties: false``
   set on the ``allOf`` instead: an unknown key is still refused.
2. Inbound messages reuse the outbound base, which requires ``to``; a webhook's message
   has ``from``, ``id``, ``timestamp``. Inbound checks use an inbound base instead (with
   the 2026 business-scoped ``from_user_id`` the description predates).

Limits written in Meta's documentation beside the schema are checked too: a text body
up to 4,096 characters, an interactive body up to 1,024, reply button titles unique.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["MetaSpec", "SpecViolation", "load_spec"]

SPEC_FILE = "whatsapp_business_messaging_v23.subset.json"
MAX_TEXT = 4096
MAX_INTERACTIVE_BODY = 1024
_BASE = {"$ref": "#/components/schemas/BaseMessageProperties"}
_INBOUND_BASE = {"$ref": "#/components/schemas/InboundMessageProperties"}


class SpecViolation(Exception):
    """A request Meta refuses: ``code`` is its error code (100 "Invalid parameter"),
    ``status`` the HTTP status."""

    def __init__(self, message: str, *, code: int = 100, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    def body(self) -> dict[str, Any]:
        """Meta's error object."""
        return {
            "error": {
                "message": f"(#{self.code}) {self.message}",
                "type": "OAuthException",
                "code": self.code,
                "fbtrace_id": "AFakeTraceId",
            }
        }


def _patched_outbound(schemas: dict[str, Any]) -> None:
    for schema in schemas.values():
        branches = schema.get("allOf") if isinstance(schema, dict) else None
        if not isinstance(branches, list):
            continue
        if any(
            isinstance(b, dict) and b.pop("additionalProperties", True) is False for b in branches
        ):
            schema["unevaluatedProperties"] = False


def _replace(value: Any, old: dict[str, Any], new: dict[str, Any]) -> Any:
    if value == old:
        return dict(new)
    if isinstance(value, list):
        return [_replace(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _replace(item, old, new) for key, item in value.items()}
    return value


class MetaSpec:
    """Checks of sends and webhooks against the (patched) description."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        outbound = copy.deepcopy(document["components"])
        _patched_outbound(outbound["schemas"])
        inbound = _replace(copy.deepcopy(outbound), _BASE, _INBOUND_BASE)
        inbound["schemas"]["InboundMessageProperties"] = {
            "type": "object",
            "required": ["from", "id", "timestamp", "type"],
            "properties": {
                "from": {"type": "string"},
                "from_user_id": {"type": "string"},
                "id": {"type": "string"},
                "timestamp": {"type": "string"},
                "type": {"type": "string"},
                "context": {"type": "object"},
            },
        }
        self._outbound = outbound
        self._inbound = inbound
        self._validators: dict[str, Any] = {}

    def check_send(self, body: Any) -> None:
        """Raises ``SpecViolation`` unless ``body`` is a ``Message`` Meta takes."""
        if not isinstance(body, dict):
            raise SpecViolation("the body must be a JSON object")
        problem = self._problem(
            "send", self._outbound, {"$ref": "#/components/schemas/Message"}, body
        )
        problem = problem or _prose_limits(body)
        if problem is not None:
            raise SpecViolation(f"Invalid parameter: {problem}")

    def check_webhook(self, payload: Any) -> str | None:
        """Why a webhook the fake built is not one the description describes."""
        return self._problem(
            "webhook", self._inbound, {"$ref": "#/components/schemas/WebhookPayload"}, payload
        )

    def check_send_answer(self, answer: Any) -> str | None:
        return self._problem(
            "answer",
            self._outbound,
            {"$ref": "#/components/schemas/MessageResponsePayload"},
            answer,
        )

    def _problem(
        self, key: str, components: dict[str, Any], schema: dict[str, Any], value: Any
    ) -> str | None:
        from jsonschema import Draft202012Validator

        validator = self._validators.get(key)
        if validator is None:
            validator = Draft202012Validator({**schema, "components": components})
            self._validators[key] = validator
        errors = list(validator.iter_errors(value))
        if not errors:
            return None
        # A oneOf's best explanation is its deepest error.
        error = max(errors, key=lambda e: len(list(e.absolute_path)))
        while error.context:
            error = max(error.context, key=lambda e: len(list(e.absolute_path)))
        where = "/".join(str(part) for part in error.absolute_path) or "(body)"
        return f"{where}: {error.message[:300]}"


def _prose_limits(body: dict[str, Any]) -> str | None:
    text = body.get("text")
    if isinstance(text, dict) and len(str(text.get("body", ""))) > MAX_TEXT:
        return f"text.body: at most {MAX_TEXT} characters"
    interactive = body.get("interactive")
    if isinstance(interactive, dict):
        text_body = (interactive.get("body") or {}).get("text", "")
        if len(str(text_body)) > MAX_INTERACTIVE_BODY:
            return f"interactive.body.text: at most {MAX_INTERACTIVE_BODY} characters"
        buttons = (interactive.get("action") or {}).get("buttons") or []
        titles = [
            ((b or {}).get("reply") or {}).get("title") for b in buttons if isinstance(b, dict)
        ]
        if len(titles) != len(set(titles)):
            return "interactive.action.buttons: titles must be unique"
    return None


@lru_cache(maxsize=1)
def load_spec() -> MetaSpec:
    text = resources.files(__package__).joinpath(SPEC_FILE).read_text(encoding="utf-8")
    return MetaSpec(json.loads(text))
