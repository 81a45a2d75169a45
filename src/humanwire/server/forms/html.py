"""A tiny HTML template helper that escapes by construction: every value interpolated
into a template is escaped unless it is already ``Html`` (markup built by this module),
so text from a request (titles, labels, options, templates) can only ever show as text."""

from __future__ import annotations

import html as _html
import json
from collections.abc import Iterable, Mapping

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "SECURITY_HEADERS",
    "Html",
    "action_block",
    "attrs",
    "document",
    "escape",
    "join",
    "json_attr",
    "render",
    "value_rows",
]


class Html(str):
    """Markup that is safe to emit as is."""

    __slots__ = ()


def escape(value: object) -> Html:
    if isinstance(value, Html):
        return value
    if value is None:
        return Html("")
    return Html(_html.escape(str(value), quote=True))


def render(template: str, /, **values: object) -> Html:
    """``str.format`` over ``template`` with every value escaped (``Html`` kept).
    Literal braces in the template are written ``{{`` and ``}}``."""
    return Html(template.format_map({k: escape(v) for k, v in values.items()}))


def join(parts: Iterable[Html | str], separator: str = "") -> Html:
    return Html(escape(separator).join(escape(p) for p in parts))


def attrs(values: Mapping[str, object]) -> Html:
    """`` name="value"`` pairs: ``True`` writes a bare boolean attribute, ``None`` and
    ``False`` leave the attribute out."""
    out: list[str] = []
    for name, value in values.items():
        if value is None or value is False:
            continue
        if value is True:
            out.append(f" {escape(name)}")
        else:
            out.append(f' {escape(name)}="{escape(value)}"')
    return Html("".join(out))


def value_rows(values: Mapping[str, object]) -> Html:
    """``values`` as the rows of a table, a name and its value each (an approval's action
    arguments, on the approval page, the inbox and the console): a string as it is,
    anything else as JSON (objects and lists indented)."""
    return join(
        render(
            '<tr><th scope="row">{name}</th><td><code>{value}</code></td></tr>',
            name=name,
            value=value
            if isinstance(value, str)
            else json.dumps(
                value, ensure_ascii=False, indent=1 if isinstance(value, (dict, list)) else None
            ),
        )
        for name, value in values.items()
    )


def action_block(name: str, arguments: Mapping[str, object]) -> Html:
    """An approval's action, its name and its arguments' table (the inbox and the console)."""
    return render(
        '<div class="approval-action"><p class="small">Action <code data-action-name>{name}</code>'
        '</p><table class="small">{rows}</table></div>',
        name=name,
        rows=value_rows(arguments),
    )


def json_attr(value: object) -> Html:
    """JSON for a ``data-*`` attribute (escaped like any attribute value)."""
    return escape(json.dumps(value, separators=(",", ":")))


CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    # The brand logo is the form author's image at its own address; everything else
    # (styles, scripts, country data) is served by the service itself.
    "img-src 'self' data: http: https:; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)

SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    # Form and inbox addresses are credentials: never leak them to the logo's host.
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def document(
    title: str,
    body: Html,
    *,
    body_class: str = "",
    scripts: Iterable[str] = (),
    head_extra: Html = Html(""),
) -> Html:
    """A whole page: mobile viewport, the local stylesheet, deferred local scripts."""
    script_tags = join(render('<script src="{src}" defer></script>', src=s) for s in scripts)
    return render(
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        "<title>{title}</title>\n"
        '<link rel="stylesheet" href="/static/humanwire.css">\n'
        '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">\n'
        "{scripts}{head_extra}\n</head>\n"
        '<body class="{body_class}">\n{body}\n</body>\n</html>\n',
        title=title,
        scripts=script_tags,
        head_extra=head_extra,
        body_class=body_class,
        body=body,
    )
