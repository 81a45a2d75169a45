"""The texts the service writes around the agent's message, exactly as the specification
lists them, and the one renderer of ``{{name}}`` placeholders."""

from __future__ import annotations

import re

from humanwire.types import (
    DEFAULT_FORM_MESSAGE,
    DEFAULT_NO_RESPONSE_TEMPLATE,
    DEFAULT_RESPONSE_TEMPLATE,
    format_seconds,
)

__all__ = [
    "DEFAULT_FORM_MESSAGE",
    "DEFAULT_NO_RESPONSE_TEMPLATE",
    "DEFAULT_RESPONSE_TEMPLATE",
    "WHATSAPP_FORM_TEXT",
    "WHATSAPP_NOTIFICATION",
    "WHATSAPP_REQUEST",
    "card_message",
    "confirmation_code_text",
    "form_message",
    "no_response_text",
    "render",
    "reply_link_text",
    "response_text",
    "whatsapp_form_message",
    "whatsapp_message",
]

WHATSAPP_NOTIFICATION = "Notification from AI agent: {{message}}. No response required."
"""Shared whatsapp account, no ``waitTime``."""

WHATSAPP_REQUEST = (
    "Your AI agent is requesting your input. Message from agent: {{message}}. "
    "Please review and reply with your guidance. If no response is received within "
    "{{waitTime}} seconds, the request will be automatically closed."
)
"""Shared whatsapp account, with ``waitTime``."""

WHATSAPP_FORM_TEXT = "Your AI agent is asking you to fill out the following form."
"""The fixed whatsapp form text; the form URL follows it as the "button"."""

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def render(template: str, **values: str) -> str:
    """Replaces ``{{name}}`` with ``values[name]`` in one pass, so placeholders inside the
    substituted text (a message that itself says ``{{url}}``) stay as written. Unknown
    placeholders are left untouched."""

    def substitute(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    return _PLACEHOLDER.sub(substitute, template)


def whatsapp_message(message: str, wait_time: float | None) -> str:
    """The shared-account whatsapp wrapper around the agent's text."""
    if wait_time is None:
        return render(WHATSAPP_NOTIFICATION, message=message)
    return render(WHATSAPP_REQUEST, message=message, waitTime=format_seconds(wait_time))


def form_message(message: str | None, url: str) -> str:
    """sms and slack forms: the customizable text with ``{{url}}``. A text that forgot the
    placeholder still gets the link, after it, so the form stays reachable."""
    template = message if message is not None else DEFAULT_FORM_MESSAGE
    if "url" not in {match.group(1) for match in _PLACEHOLDER.finditer(template)}:
        return f"{template} {url}"
    return render(template, url=url)


def whatsapp_form_message(url: str) -> str:
    """The fixed, not customizable, whatsapp form text with the link as its button."""
    return f"{WHATSAPP_FORM_TEXT}\n{url}"


def card_message(template: str | None, message: str, wait_time: float | None) -> str:
    """A channel card's outgoing template around the agent's ``{{message}}``."""
    if template is None:
        return message
    return render(
        template,
        message=message,
        waitTime=format_seconds(wait_time) if wait_time is not None else "",
    )


def reply_link_text(text: str, url: str) -> str:
    """A channel card with ``replyLink``: the reply page link under the message."""
    return f"{text}\n\nReply here: {url}"


def response_text(template: str | None, reply: str) -> str:
    """The human's reply as the agent sees it (``Human response: …`` by default)."""
    return render(template or DEFAULT_RESPONSE_TEMPLATE, message=reply)


def no_response_text(template: str | None) -> str:
    return template or DEFAULT_NO_RESPONSE_TEMPLATE


def confirmation_code_text(code: str) -> str:
    """The text a person's address is confirmed by (``POST /people/{personId}/confirm``)."""
    return (
        f"Your confirmation code is {code}. Reply with this code to confirm this address. "
        "If you did not expect it, ignore this message."
    )
