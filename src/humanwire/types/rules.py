"""The wire's rules, for the service to apply exactly as the client does: the pattern of
an ``Idempotency-Key``, the E.164 check, a regex as a JSON Schema ``pattern``, and the
form-pattern dialect (docs/design.md "Form patterns"). Their code lives in the private
``_base`` and ``_pattern``; this is the public seam the server imports them through."""

from __future__ import annotations

from ._base import IDEMPOTENCY_KEY, check_e164, schema_pattern
from ._pattern import PatternError, compiled_pattern

__all__ = ["IDEMPOTENCY_KEY", "PatternError", "check_e164", "compiled_pattern", "schema_pattern"]
