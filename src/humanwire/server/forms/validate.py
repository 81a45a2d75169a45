"""Server-side validation of a submitted form, with the rules the browser applies too.

CONTRACT (owned by the pages work; the engine calls it from ``submit_form``)."""

from __future__ import annotations

from humanwire.types import Form


def validate_submission(form: Form, raw: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Checks ``raw`` (field id → submitted text, as a browser or JSON post sends it)
    against ``form``: required, email, phone number (parsed, stored as E.164), select
    value among the options, checkbox, regex rules (search semantics), address (the
    pluggable validator). Unknown field ids are an error.

    Returns ``(values, errors)``: ``values`` normalized for storage (checkbox
    ``"true"``/``"false"``, phone in E.164, unanswered optional fields left out);
    ``errors`` maps field id to the message shown under the field. Empty ``errors``
    means the submission is accepted.
    """
    raise NotImplementedError


def format_content(form: Form, values: dict[str, str]) -> str:
    """One ``label: value`` line per answered field, in field order; a select shows its
    option's label, a checkbox ``Yes`` or ``No``."""
    raise NotImplementedError
