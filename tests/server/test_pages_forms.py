"""The form page over real HTTP (no browser): states, JSON and browser posts, errors,
escaping, security headers, local assets."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from humanwire import HumanWire
from humanwire.server.forms.countries import countries
from humanwire.server.forms.render import format_duration, join_phone, raw_from_post
from humanwire.testing.service import RunningService
from humanwire.types import Form, FormReceivedPayload

FIELDS: list[dict[str, Any]] = [
    {"id": "name", "label": "Name", "type": "text", "required": True},
    {"id": "ok", "label": "OK?", "type": "checkbox"},
    {
        "id": "size",
        "label": "Size",
        "type": "select",
        "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}],
    },
    {"id": "phone", "label": "Phone", "type": "phone_number"},
]


def send(client: HumanWire, fields: list[dict[str, Any]] | None = None, **options: Any) -> Any:
    options.setdefault("follow_up_time", 60)
    return client.forms.sms(
        to="+12025550100", title=options.pop("title", "T"), fields=fields or FIELDS, **options
    )


def values_of(client: HumanWire, interaction_id: str) -> dict[str, str]:
    result = client.interactions.status(interaction_id).result
    assert result is not None and isinstance(result.payload, FormReceivedPayload), result
    return dict(result.payload.values)


def error(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()["error"]
    return body


def test_form_link_is_unguessable_and_needs_no_key(humanwire_client: HumanWire) -> None:
    sent = send(humanwire_client)
    token = sent.form_url.rsplit("/f/", 1)[1]
    assert len(token) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", token)
    page = httpx.get(sent.form_url)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")


def test_security_headers(humanwire_client: HumanWire) -> None:
    page = httpx.get(send(humanwire_client).form_url)
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp and "form-action 'self'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-store"


def test_page_loads_only_local_assets(
    humanwire_client: HumanWire, humanwire_service: RunningService
) -> None:
    sent = send(humanwire_client, brand_image_url="https://brand.example/logo.png")
    html = httpx.get(sent.form_url).text
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    external = [u for u in urls if not u.startswith("/")]
    assert external == ["https://brand.example/logo.png"]  # only the author's own logo
    assert 'referrerpolicy="no-referrer"' in html
    for asset in ("/static/humanwire.css", "/static/form.js", "/static/countries.json"):
        response = httpx.get(humanwire_service.base_url + asset)
        assert response.status_code == 200, asset
        assert len(response.content) > 1000


def test_json_submission(humanwire_client: HumanWire) -> None:
    sent = send(humanwire_client)
    response = httpx.post(
        sent.form_url,
        json={"values": {"name": "Ada", "ok": True, "size": "l", "phone": "+1 202 555 0123"}},
    )
    assert response.status_code == 200
    assert response.json() == {"status": "submitted"}
    assert values_of(humanwire_client, sent.interaction_id) == {
        "name": "Ada",
        "ok": "true",
        "size": "l",
        "phone": "+12025550123",
    }
    again = httpx.post(sent.form_url, json={"values": {"name": "Bob"}})
    assert again.status_code == 409
    assert error(again)["code"] == "conflict"
    # The page now says it was submitted; a second browser post gets a clear page.
    assert "Thank you, your answers were sent" in httpx.get(sent.form_url).text
    refused = httpx.post(sent.form_url, data={"name": "Bob"})
    assert refused.status_code == 409
    assert "This form was already submitted" in refused.text


@pytest.mark.parametrize(
    ("body", "status", "field", "message"),
    [
        ({"values": {}}, 400, "name", "This field is required."),
        ({"values": {"name": "A", "size": "Large"}}, 400, "size", "Choose one of the options."),
        ({"values": {"name": "A", "phone": "12"}}, 400, "phone", None),
        ({"values": {"name": "A", "ok": "maybe"}}, 400, "ok", None),
        ({"values": {"name": "A", "nope": "1"}}, 400, "nope", "This form has no such field."),
        ({"values": {"name": ["A"]}}, 400, "values.name", None),
        ({"values": "name=A"}, 400, "values", None),
        ({"values": {"name": "A"}, "extra": 1}, 400, "extra", None),
    ],
)
def test_json_submission_refused(
    humanwire_client: HumanWire,
    body: dict[str, Any],
    status: int,
    field: str,
    message: str | None,
) -> None:
    sent = send(humanwire_client)
    response = httpx.post(sent.form_url, json=body)
    assert response.status_code == status
    assert error(response)["code"] == "invalid_request"
    assert error(response)["field"] == field
    if message is not None:
        assert error(response)["message"] == message
    assert humanwire_client.interactions.status(sent.interaction_id).status == "pending"


def test_bad_json_is_a_400(humanwire_client: HumanWire) -> None:
    sent = send(humanwire_client)
    response = httpx.post(
        sent.form_url, content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert error(response)["code"] == "invalid_request"


def test_unknown_token(humanwire_service: RunningService) -> None:
    url = f"{humanwire_service.base_url}/f/{'x' * 43}"
    page = httpx.get(url)
    assert page.status_code == 404 and "Form not found" in page.text
    response = httpx.post(url, json={"values": {}})
    assert response.status_code == 404
    assert error(response)["code"] == "not_found"


def test_expired_form_is_gone(humanwire_client: HumanWire) -> None:
    sent = send(humanwire_client, follow_up_time=1)
    time.sleep(1.2)
    page = httpx.get(sent.form_url)
    assert page.status_code == 410 and "This form has expired" in page.text
    response = httpx.post(sent.form_url, json={"values": {"name": "late"}})
    assert response.status_code == 410
    assert error(response)["code"] == "gone"
    assert httpx.post(sent.form_url, data={"name": "late"}).status_code == 410


def test_browser_post_redirects_to_the_confirmation(humanwire_client: HumanWire) -> None:
    sent = send(humanwire_client)
    response = httpx.post(
        sent.form_url,
        data={
            "name": "Ada",
            "ok": "on",
            "size": "s",
            "phone": "020 7946 0018",
            "phone:country": "GB",
        },
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/f/" + sent.form_url.rsplit("/f/", 1)[1]
    values = values_of(humanwire_client, sent.interaction_id)
    assert values["phone"] == "+442079460018"
    assert values["ok"] == "true"


def test_browser_post_refused_keeps_the_input(humanwire_client: HumanWire) -> None:
    sent = send(humanwire_client)
    response = httpx.post(
        sent.form_url, data={"name": "", "phone": "<b>12</b>", "phone:country": "FR"}
    )
    assert response.status_code == 400
    html = response.text
    assert "This field is required." in html
    assert 'value="&lt;b&gt;12&lt;/b&gt;"' in html
    assert re.search(r'<option value="FR" data-code="33" selected>', html)
    assert 'aria-invalid="true"' in html
    assert humanwire_client.interactions.status(sent.interaction_id).status == "pending"


def test_multipart_post_is_refused_cleanly(humanwire_client: HumanWire) -> None:
    sent = send(humanwire_client)
    response = httpx.post(sent.form_url, files={"name": ("a.txt", b"Ada")})
    assert response.status_code == 400
    assert "application/x-www-form-urlencoded" in response.text


def test_everything_from_the_request_is_escaped(humanwire_client: HumanWire) -> None:
    xss = "<img src=x onerror=alert(1)>"
    sent = send(
        humanwire_client,
        [
            {
                "id": "a",
                "label": xss,
                "type": "select",
                "helperText": xss,
                "placeholder": '"><script>alert(1)</script>',
                "options": [{"label": xss, "value": '"><img src=y>'}],
            },
            {
                "id": "b",
                "label": "B",
                "type": "text",
                "placeholder": '" autofocus onfocus="alert(1)',
                "validations": [{"title": xss, "pattern": "^</script>$"}],
            },
        ],
        title=xss,
        description=xss,
        submit_label=xss,
        brand_image_url='https://x.example/"onerror="alert(1)',
    )
    html = httpx.get(sent.form_url).text
    assert "<img src=x" not in html and "<img src=y" not in html and "<script>alert" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'onfocus="alert' not in html and '"onerror="' not in html


def test_countries_cover_the_world() -> None:
    by_region = {c.region: c for c in countries()}
    assert len(by_region) > 240
    assert by_region["GB"].name == "United Kingdom" and by_region["GB"].calling_code == 44
    assert by_region["XK"].name == "Kosovo"
    assert all(c.name and c.calling_code > 0 for c in countries())
    for country in countries():  # the browser compiles these: keep them plain
        re.compile(f"^(?:{country.general_pattern})$")
        re.compile(f"^(?:{country.valid_pattern})$")


def test_join_phone_and_raw_from_post() -> None:
    assert join_phone("GB", "020 7946 0018") == "+44 020 7946 0018"
    assert join_phone("GB", "+1 202 555 0123") == "+1 202 555 0123"
    assert join_phone("GB", "0033 6 12") == "0033 6 12"
    assert join_phone("", "12") == "12"
    form = Form.model_validate({"title": "T", "fields": FIELDS, "waitTime": 5})
    raw = raw_from_post(form, {"name": "A", "phone": "6 12 34 56 78", "phone:country": "FR"})
    assert raw == {"name": "A", "phone": "+33 6 12 34 56 78"}


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0, "0:00"), (4.2, "0:05"), (65, "1:05"), (3600, "1:00:00")]
)
def test_format_duration(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown
