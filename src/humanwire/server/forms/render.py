"""The form page a recipient opens from ``formUrl``, and its other states (submitted,
already submitted, expired, unknown link).

Everything from the request is escaped (``html.render``). The page works without
JavaScript (native controls, server-side validation re-rendering the input kept);
``static/form.js`` adds the same validation in the browser, the live countdown and the
searchable country-code picker."""

from __future__ import annotations

import time
from collections.abc import Mapping

import phonenumbers

from humanwire.types import Form, FormField

from ..engine import FormView
from .address import (
    HOUSE_NUMBER_PATTERN,
    MISSING_HOUSE_NUMBER,
    MISSING_POSTAL_CODE,
    MISSING_STREET_NAME,
    MISSING_TOWN,
    PART_SEPARATOR_PATTERN,
    POSTAL_CODE_PATTERN,
    STREET_NAME_PATTERN,
    UNCHECKED_NOTICE,
    AddressValidator,
    StructuralAddressValidator,
)
from .countries import countries, default_region
from .html import Html, attrs, document, join, json_attr, render
from .validate import (
    CHECKBOX_REQUIRED_MESSAGE,
    EMAIL_MESSAGE,
    EMAIL_PATTERN,
    MAX_VALUE_LENGTH,
    PHONE_COUNTRY_MESSAGE,
    PHONE_MESSAGE,
    REQUIRED_MESSAGE,
    SELECT_MESSAGE,
    SPECIAL_USE_DOMAINS,
)

__all__ = [
    "COUNTRY_SUFFIX",
    "DEFAULT_SUBMIT_LABEL",
    "USE_SUGGESTION_SUFFIX",
    "format_duration",
    "join_phone",
    "raw_from_post",
    "render_already_submitted",
    "render_expired",
    "render_form_page",
    "render_not_found",
    "render_submitted",
]

DEFAULT_SUBMIT_LABEL = "Submit"
COUNTRY_SUFFIX = ":country"
"""A phone field posts its country as ``<id>:country``; a colon is never in a field id."""
USE_SUGGESTION_SUFFIX = ":use-suggestion"
"""An address field with a suggested correction posts ``<id>:use-suggestion`` (the
suggested address) when the person ticks "Use this address": it replaces the typed one."""


def format_duration(seconds: float) -> str:
    """``4:05`` or ``1:02:03``: what the countdown shows."""
    total = max(0, int(seconds + 0.999))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def join_phone(region: str, number: str) -> str:
    """The one string ``validate_submission`` takes for a phone field: a number typed
    with its ``+`` code stays as typed, else the chosen country's code goes in front."""
    typed = number.strip()
    if not typed or typed.startswith(("+", "00")):
        return typed
    code = phonenumbers.country_code_for_region(region.upper()) if region else 0
    return f"+{code} {typed}" if code else typed


def raw_from_post(form: Form, posted: Mapping[str, str]) -> dict[str, str]:
    """A browser post as ``validate_submission`` takes it: each phone field's country
    and number joined; an accepted address suggestion in place of the typed address.
    Unknown names are kept so validation refuses them."""
    raw = {
        k: v
        for k, v in posted.items()
        if not k.endswith(COUNTRY_SUFFIX) and not k.endswith(USE_SUGGESTION_SUFFIX)
    }
    for form_field in form.fields:
        accepted = posted.get(form_field.id + USE_SUGGESTION_SUFFIX)
        if form_field.type == "address" and accepted:
            # Checked again like anything typed: the post is the person's, not ours.
            raw[form_field.id] = accepted
        if form_field.type == "phone_number" and form_field.id in raw:
            region = posted.get(form_field.id + COUNTRY_SUFFIX, "")
            raw[form_field.id] = join_phone(region, raw[form_field.id])
    return raw


def _recipient_region(to: str | None) -> str:
    """The country of the number the form was sent to: the likeliest phone country."""
    if isinstance(to, str) and to.startswith("+"):
        try:
            region = phonenumbers.region_code_for_number(phonenumbers.parse(to, None))
        except phonenumbers.NumberParseException:
            region = None
        if region and region != "ZZ":
            return str(region)
    return default_region()


# -- fields -----------------------------------------------------------------------


def _ids(form_field: FormField) -> tuple[str, str, str]:
    base = f"f-{form_field.id}"
    return base, f"{base}-help", f"{base}-error"


def _described_by(form_field: FormField) -> str:
    _, help_id, error_id = _ids(form_field)
    return f"{help_id} {error_id}" if form_field.helper_text else error_id


def _label(form_field: FormField, for_id: str) -> Html:
    marker = (
        Html('<span class="required" aria-hidden="true">*</span>') if form_field.required else ""
    )
    return render(
        '<label class="label" for="{for_id}">{label}{marker}</label>',
        for_id=for_id,
        label=form_field.label,
        marker=marker,
    )


def _helper_and_error(form_field: FormField, error: str | None) -> Html:
    _, help_id, error_id = _ids(form_field)
    helper = (
        render('<p class="helper" id="{id}">{text}</p>', id=help_id, text=form_field.helper_text)
        if form_field.helper_text
        else Html("")
    )
    # The error slot always exists so the browser script can fill it in place.
    return render(
        '{helper}<p class="error" id="{id}"{hidden}>{text}</p>',
        helper=helper,
        id=error_id,
        hidden=attrs({"hidden": not error}),
        text=error or "",
    )


def _common_attrs(form_field: FormField, error: str | None) -> dict[str, object]:
    input_id, _, _ = _ids(form_field)
    return {
        "id": input_id,
        "name": form_field.id,
        "required": form_field.required,
        "aria-required": "true" if form_field.required else None,
        "aria-describedby": _described_by(form_field),
        "aria-invalid": "true" if error else None,
        "data-rules": json_attr([r.model_dump() for r in form_field.validations])
        if form_field.validations
        else None,
    }


def _text_like(form_field: FormField, value: str, error: str | None) -> Html:
    input_id, _, _ = _ids(form_field)
    common = _common_attrs(form_field, error)
    common["placeholder"] = form_field.placeholder
    common["maxlength"] = MAX_VALUE_LENGTH
    if form_field.type in ("textarea", "address"):
        if form_field.type == "address":
            common["autocomplete"] = "street-address"
        control = render(
            '<textarea{attrs} rows="{rows}">{value}</textarea>',
            attrs=attrs(common),
            rows=4 if form_field.type == "textarea" else 3,
            value=value,
        )
    else:
        input_type = "email" if form_field.type == "email" else "text"
        extra: dict[str, object] = {"type": input_type, "value": value}
        if form_field.type == "email":
            extra |= {"autocomplete": "email", "inputmode": "email", "spellcheck": "false"}
        control = render("<input{attrs}>", attrs=attrs(extra | common))
    return render(
        "{label}{control}{after}",
        label=_label(form_field, input_id),
        control=control,
        after=_helper_and_error(form_field, error),
    )


def _select(form_field: FormField, value: str, error: str | None) -> Html:
    input_id, _, _ = _ids(form_field)
    prompt = form_field.placeholder or "Choose…"
    options = [
        render(
            '<option value=""{selected}>{prompt}</option>',
            selected=attrs({"selected": not value}),
            prompt=prompt,
        )
    ]
    for option in form_field.options or ():
        options.append(
            render(
                '<option value="{value}"{selected}>{label}</option>',
                value=option.value,
                selected=attrs({"selected": option.value == value}),
                label=option.label,
            )
        )
    return render(
        "{label}<select{attrs}>{options}</select>{after}",
        label=_label(form_field, input_id),
        attrs=attrs(_common_attrs(form_field, error)),
        options=join(options),
        after=_helper_and_error(form_field, error),
    )


def _checkbox(form_field: FormField, value: str, error: str | None) -> Html:
    input_id, _, _ = _ids(form_field)
    checked = value.strip().lower() in ("true", "on", "yes", "1")
    common = _common_attrs(form_field, error) | {"type": "checkbox", "value": "true"}
    common["checked"] = checked
    return render(
        '<div class="check"><input{attrs}>{label}</div>{after}',
        attrs=attrs(common),
        label=_label(form_field, input_id),
        after=_helper_and_error(form_field, error),
    )


def _phone(form_field: FormField, value: str, region: str, error: str | None) -> Html:
    input_id, _, _ = _ids(form_field)
    country_id = f"{input_id}-country"
    options = join(
        render(
            '<option value="{region}" data-code="{code}"{selected}>{name} (+{code})</option>',
            region=c.region,
            code=c.calling_code,
            name=c.name,
            selected=attrs({"selected": c.region == region}),
        )
        for c in countries()
    )
    common = _common_attrs(form_field, error) | {
        "type": "tel",
        "value": value,
        "autocomplete": "tel-national",
        "inputmode": "tel",
        "placeholder": form_field.placeholder,
        "maxlength": 40,
    }
    return render(
        '{label}<div class="phone" data-phone>'
        '<select class="country" id="{country_id}" name="{country_name}" '
        'aria-label="Country code for {field_label}">{options}</select>'
        "<input{attrs}></div>{after}",
        label=_label(form_field, input_id),
        country_id=country_id,
        country_name=form_field.id + COUNTRY_SUFFIX,
        field_label=form_field.label,
        options=options,
        attrs=attrs(common),
        after=_helper_and_error(form_field, error),
    )


def _suggestion(form_field: FormField, suggestion: str, attribution: str) -> Html:
    """The corrected address and the box that accepts it: a real form control, so the
    page works without JavaScript (``form.js`` also puts it in the text box)."""
    input_id, _, _ = _ids(form_field)
    return render(
        '<div class="suggestion" data-suggestion>'
        '<p class="suggestion-label" id="{id}-suggestion-label">Suggested address</p>'
        '<p class="suggested" id="{id}-suggestion">{text}</p>'
        '<div class="check"><input type="checkbox" id="{id}-use" name="{name}" value="{text}" '
        'data-use-suggestion="{id}" aria-describedby="{id}-suggestion">'
        '<label class="label" for="{id}-use">Use this address</label></div>{credit}</div>',
        id=input_id,
        name=form_field.id + USE_SUGGESTION_SUFFIX,
        text=suggestion,
        credit=render('<p class="helper">{text}</p>', text=attribution) if attribution else "",
    )


def _field(
    form_field: FormField,
    posted: Mapping[str, str],
    default_phone: str,
    error: str | None,
    suggestion: str | None = None,
    attribution: str = "",
) -> Html:
    value = posted.get(form_field.id, "")
    if form_field.type == "select":
        inner = _select(form_field, value, error)
    elif form_field.type == "checkbox":
        inner = _checkbox(form_field, value, error)
    elif form_field.type == "phone_number":
        region = posted.get(form_field.id + COUNTRY_SUFFIX, "") or default_phone
        inner = _phone(form_field, value, region, error)
    else:
        inner = _text_like(form_field, value, error)
    if form_field.type == "address" and suggestion:
        offered = _suggestion(form_field, suggestion, attribution)
        inner = render("{inner}{offered}", inner=inner, offered=offered)
    return render(
        '<div class="field field-{type}" data-field="{id}" data-type="{type}">{inner}</div>',
        type=form_field.type,
        id=form_field.id,
        inner=inner,
    )


# -- pages ----------------------------------------------------------------------------


def _header(form: Form) -> Html:
    logo = (
        render(
            '<img class="brand" src="{src}" alt="" referrerpolicy="no-referrer">',
            src=form.brand_image_url,
        )
        if form.brand_image_url
        else Html("")
    )
    description = (
        render('<p class="description">{text}</p>', text=form.description)
        if form.description
        else Html("")
    )
    return render(
        "<header>{logo}<h1>{title}</h1>{description}</header>",
        logo=logo,
        title=form.title,
        description=description,
    )


def _countdown(view: FormView, now: float) -> Html:
    late = ""
    if view.wait_deadline is not None and now < view.wait_deadline:
        text = f"Time left to answer: {format_duration(view.wait_deadline - now)}"
    elif view.wait_deadline is None:
        text = f"Time left to answer: {format_duration(view.follow_up_deadline - now)}"
    else:
        late = " late"
        text = f"You can still send this form for {format_duration(view.follow_up_deadline - now)}"
    return render(
        '<div class="countdown{late}" data-countdown data-now="{now}" data-wait="{wait}" '
        'data-follow-up="{follow_up}"><span class="clock" aria-hidden="true"></span>'
        '<span class="countdown-text" role="timer" aria-live="off">{text}</span></div>'
        '<p class="sr-only" aria-live="polite" data-countdown-announce></p>',
        late=late,
        now=int(now * 1000),
        wait="" if view.wait_deadline is None else int(view.wait_deadline * 1000),
        follow_up=int(view.follow_up_deadline * 1000),
        text=text,
    )


def _browser_config(addresses: AddressValidator | None) -> dict[str, object]:
    """The rules the browser mirrors, from the same constants the server uses. The
    browser runs the structural address rules only when the service's validator is the
    structural one (a provider is asked by the server)."""
    validator = addresses or StructuralAddressValidator()
    return {
        "messages": {
            "required": REQUIRED_MESSAGE,
            "checkboxRequired": CHECKBOX_REQUIRED_MESSAGE,
            "email": EMAIL_MESSAGE,
            "phone": PHONE_MESSAGE,
            "phoneCountry": PHONE_COUNTRY_MESSAGE,
            "select": SELECT_MESSAGE,
        },
        "email": {"pattern": EMAIL_PATTERN, "specialUse": list(SPECIAL_USE_DOMAINS)},
        "address": {
            "check": validator.name,
            "separator": PART_SEPARATOR_PATTERN,
            "houseNumber": HOUSE_NUMBER_PATTERN,
            "streetName": STREET_NAME_PATTERN,
            "postalCode": POSTAL_CODE_PATTERN,
            "requirePostalCode": bool(getattr(validator, "require_postal_code", True)),
            "missing": {
                "houseNumber": MISSING_HOUSE_NUMBER,
                "streetName": MISSING_STREET_NAME,
                "town": MISSING_TOWN,
                "postalCode": MISSING_POSTAL_CODE,
            },
        },
        "countries": "/static/countries.json",
    }


def render_form_page(
    view: FormView,
    *,
    posted: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
    now: float | None = None,
    recipient: str | None = None,
    suggestions: Mapping[str, str] | None = None,
    addresses: AddressValidator | None = None,
) -> Html:
    """The open form; after a refused post, ``posted`` (the browser's fields as sent)
    and ``errors`` (field id → message) re-render it with the input kept, and
    ``suggestions`` (field id → a corrected address) offer a provider's correction.
    ``recipient`` (the number the link went to) picks the phone fields' default
    country; ``addresses`` is the service's address validator (structural by default)."""
    now = time.time() if now is None else now
    form = view.form
    posted = posted or {}
    errors = errors or {}
    default_phone = _recipient_region(recipient or getattr(form, "to", None))
    field_errors = {f.id: errors[f.id] for f in form.fields if f.id in errors}
    other_errors = [m for k, m in errors.items() if k not in field_errors]
    summary = Html("")
    if errors:
        items = [
            render(
                '<li><a href="#f-{id}">{label}: {message}</a></li>',
                id=f.id,
                label=f.label,
                message=field_errors[f.id],
            )
            for f in form.fields
            if f.id in field_errors
        ] + [render("<li>{message}</li>", message=m) for m in other_errors]
        count = len(items)
        summary = render(
            '<div class="summary" role="alert" tabindex="-1" data-summary>'
            "<h2>{heading}</h2><ul>{items}</ul></div>",
            heading="Please fix 1 answer" if count == 1 else f"Please fix {count} answers",
            items=join(items),
        )
    else:
        summary = Html('<div class="summary" role="alert" tabindex="-1" data-summary hidden></div>')
    suggestions = suggestions or {}
    fields = join(
        _field(
            f,
            posted,
            default_phone,
            field_errors.get(f.id),
            suggestions.get(f.id),
            str(getattr(addresses, "attribution", "")),
        )
        for f in form.fields
    )
    body = render(
        '<main class="sheet">{header}{countdown}'
        '<form method="post" action="/f/{token}" class="hw-form" data-config="{config}" '
        'accept-charset="utf-8">{summary}{fields}'
        '<p class="legend"><span class="required" aria-hidden="true">*</span> required</p>'
        '<button type="submit" class="primary">{submit}</button>'
        "</form>"
        '<div class="expired-note" data-expired-note hidden role="status">'
        "<h2>This form has expired</h2><p>It no longer accepts answers.</p></div>"
        "</main>{footer}",
        header=_header(form),
        countdown=_countdown(view, now),
        token=view.token,
        config=json_attr(_browser_config(addresses)),
        summary=summary,
        fields=fields,
        submit=form.submit_label or DEFAULT_SUBMIT_LABEL,
        footer=_FOOTER,
    )
    title = f"Error: {form.title}" if errors else form.title
    return document(title, body, body_class="form-page", scripts=["/static/form.js"])


_FOOTER = Html('<footer class="foot">Sent by an AI agent through humanwire</footer>')


def _notice(form: Form | None, heading: str, text: str, *, tone: str) -> Html:
    header = _header(form) if form is not None else Html("")
    body = render(
        '<main class="sheet">{header}<section class="notice notice-{tone}" role="status">'
        '<span class="notice-icon" aria-hidden="true"></span>'
        "<h2>{heading}</h2><p>{text}</p></section></main>{footer}",
        header=header,
        tone=tone,
        heading=heading,
        text=text,
        footer=_FOOTER,
    )
    title = f"{heading}: {form.title}" if form is not None else heading
    return document(title, body, body_class="form-page")


def render_submitted(view: FormView, *, unchecked_address: bool = False) -> Html:
    """``unchecked_address``: an address was accepted without the provider's check
    (``[address] on_unavailable = "accept"``), and the person is told so."""
    text = "You can close this page now."
    if unchecked_address:
        text = f"{UNCHECKED_NOTICE} {text}"
    return _notice(view.form, "Thank you, your answers were sent", text, tone="ok")


def render_already_submitted(view: FormView) -> Html:
    return _notice(
        view.form,
        "This form was already submitted",
        "Only the first submission counts; this one was not recorded.",
        tone="warn",
    )


def render_expired(view: FormView) -> Html:
    return _notice(
        view.form,
        "This form has expired",
        "The time to answer it has run out, so it no longer accepts answers.",
        tone="warn",
    )


def render_not_found() -> Html:
    return _notice(
        None,
        "Form not found",
        "This link does not lead to a form. Check that it was copied completely.",
        tone="warn",
    )
