"""``SchemaCheck``: what a contract fake says of a body against a schema of the provider's
published description: the shallowest error, where it is and what it is, one line. Each
schema's validator is built once (the fake says which draft and how references resolve)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


class SchemaCheck:
    def __init__(self, validator_for: Callable[[dict[str, Any]], Any]) -> None:
        self._validator_for = validator_for
        self._validators: dict[str, Any] = {}

    def problem(self, schema: dict[str, Any], value: Any) -> str | None:
        """Why ``value`` does not fit ``schema`` (its shallowest error), else ``None``."""
        errors = sorted(
            self.validator(schema).iter_errors(value),
            key=lambda error: len(list(error.absolute_path)),
        )
        if not errors:
            return None
        error = errors[0]
        where = "/".join(str(part) for part in error.absolute_path) or "(body)"
        return f"{where}: {error.message[:300]}"

    def validator(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        validator = self._validators.get(key)
        if validator is None:
            validator = self._validators[key] = self._validator_for(schema)
        return validator
