"""``metadata``: the caller's own labels on a send (docs/design.md "Metadata"), stored with the
interaction and echoed on its response, its status and every event about it.

Up to ``METADATA_MAX_KEYS`` string keys of 1 to ``METADATA_MAX_KEY_LENGTH`` characters,
each with a string value of at most ``METADATA_MAX_VALUE_LENGTH`` characters; anything
else is 400 on ``metadata`` (checked whole, so the error names the field, not a key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

__all__ = [
    "METADATA_MAX_KEYS",
    "METADATA_MAX_KEY_LENGTH",
    "METADATA_MAX_VALUE_LENGTH",
    "Metadata",
    "check_metadata",
]

METADATA_MAX_KEYS = 20
METADATA_MAX_KEY_LENGTH = 40
METADATA_MAX_VALUE_LENGTH = 500


def _invalid(message: str) -> PydanticCustomError:
    return PydanticCustomError("invalid_request", message)


def check_metadata(value: Any) -> dict[str, str]:
    """``value`` as stored, or the error naming what is wrong with it."""
    if not isinstance(value, Mapping):
        raise _invalid("metadata must be an object of string keys and string values")
    if len(value) > METADATA_MAX_KEYS:
        raise _invalid(f"metadata has {len(value)} keys; at most {METADATA_MAX_KEYS}")
    checked: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not 0 < len(key) <= METADATA_MAX_KEY_LENGTH:
            raise _invalid(
                f"metadata keys are strings of 1 to {METADATA_MAX_KEY_LENGTH} characters"
            )
        if not isinstance(item, str):
            raise _invalid(f"metadata[{key!r}] must be a string")
        if len(item) > METADATA_MAX_VALUE_LENGTH:
            raise _invalid(
                f"metadata[{key!r}] is {len(item)} characters; at most {METADATA_MAX_VALUE_LENGTH}"
            )
        checked[key] = item
    return checked


Metadata = Annotated[
    dict[str, str],
    PlainValidator(check_metadata),
    WithJsonSchema(
        {
            "type": "object",
            "description": (
                "Your own labels, echoed on the response, the status and every event "
                "about this interaction."
            ),
            "maxProperties": METADATA_MAX_KEYS,
            "propertyNames": {"minLength": 1, "maxLength": METADATA_MAX_KEY_LENGTH},
            "additionalProperties": {"type": "string", "maxLength": METADATA_MAX_VALUE_LENGTH},
        }
    ),
]
"""A send's ``metadata`` (requests). Responses carry ``dict[str, str] | None``."""
