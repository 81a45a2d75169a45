"""A client generated from the OpenAPI document by openapi-python-client, used as it was
generated (nothing edited), against the real service over loopback on both stores: an SMS
ask, a form and an approval, each body built from the generated models' typed fields (a
body the generator had read as a union of its ``anyOf`` branches has none of them).

The client is generated once for the module, from the document the service serves (the
test checks it is the same one), with no formatting hooks: what the generator writes is
what runs."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest
from e2e_support import HUMAN

from humanwire.server.http.openapi import build_openapi
from humanwire.server.routes import api_operations
from humanwire.testing import RunningService, ScriptedHuman

PACKAGE = "humanwire_generated_client"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return build_openapi(api_operations(sandbox_enabled=True), "http://127.0.0.1")


@pytest.fixture(scope="module")
def generated(
    tmp_path_factory: pytest.TempPathFactory, document: dict[str, Any]
) -> Iterator[ModuleType]:
    """The generated package, imported (its ``api`` and ``models`` loaded on use)."""
    where = tmp_path_factory.mktemp("generated")
    source = where / "openapi.json"
    source.write_text(json.dumps(document))
    config = where / "config.json"
    config.write_text(json.dumps({"post_hooks": []}))
    # --fail-on-warning: a schema the generator skips (or reads only in part) fails here.
    generate = [sys.executable, "-m", "openapi_python_client", "generate"]
    generate += ["--path", str(source), "--output-path", str(where / PACKAGE)]
    generate += ["--meta", "none", "--config", str(config), "--fail-on-warning"]
    run = subprocess.run(generate, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def _part(generated: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{generated.__name__}.{name}")


@pytest.fixture
def api(
    generated: ModuleType,
    document: dict[str, Any],
    humanwire_service: RunningService,
    humanwire_api_key: str,
) -> Iterator[Any]:
    """The generated client for this test's account."""
    served = httpx.get(f"{humanwire_service.base_url}/openapi.json").json()
    assert (served["paths"], served["components"]) == (document["paths"], document["components"])
    client = _part(generated, "client").AuthenticatedClient(
        base_url=humanwire_service.base_url,
        token=humanwire_api_key,
        timeout=httpx.Timeout(30.0),
        raise_on_unexpected_status=True,
    )
    with client:
        yield client


def test_an_sms_ask_is_answered(generated: ModuleType, api: Any, human: ScriptedHuman) -> None:
    models = _part(generated, "models")
    send_sms = _part(generated, "api.messages.send_sms")
    human.reply("yes, ship it")
    answer = send_sms.sync_detailed(
        client=api, body=models.SMSMessageRequest(message="Ship?", to=HUMAN, wait_time=10)
    )
    assert answer.status_code == 200, answer.content
    result = answer.parsed
    assert isinstance(result, models.MessageResponse)
    assert result.response == "Human response: yes, ship it"
    assert result.status.value == "ended"


def test_a_form_is_filled_in(generated: ModuleType, api: Any, human: ScriptedHuman) -> None:
    models = _part(generated, "models")
    send_sms_form = _part(generated, "api.forms.send_sms_form")
    filled = human.fill_form({"name": "Ada", "plan": "pro"})
    body = models.SMSFormRequest(
        title="Sign up",
        to=HUMAN,
        wait_time=10,
        fields=[
            models.FormField(id="name", label="Name", type_=models.FormFieldType.TEXT),
            models.FormField(
                id="plan",
                label="Plan",
                type_=models.FormFieldType.SELECT,
                options=[models.FieldOption(label="Pro plan", value="pro")],
            ),
        ],
    )
    answer = send_sms_form.sync_detailed(client=api, body=body)
    assert answer.status_code == 200, answer.content
    result = answer.parsed
    assert isinstance(result, models.FormResponse)
    assert result.responded is True
    assert result.values.to_dict() == {"name": "Ada", "plan": "pro"}
    assert result.content == "Name: Ada\nPlan: Pro plan"
    assert filled.wait().form_url == result.form_url


def test_an_approval_is_decided_and_consumed(
    generated: ModuleType, api: Any, human: ScriptedHuman
) -> None:
    models = _part(generated, "models")
    request_approval = _part(generated, "api.approvals.request_approval")
    consume_approval = _part(generated, "api.approvals.consume_approval")
    human.decide_approval("approve", "go ahead")
    body = models.ApprovalRequest(
        title="Wire $4,200 to ACME Ltd",
        action=models.ApprovalAction(
            name="wire_money",
            arguments=models.ApprovalActionArguments.from_dict({"amount": 4200}),
        ),
        approvers=[models.Approver(channel=models.ApproverChannel.SMS, to=HUMAN)],
        wait_time=10,
    )
    answer = request_approval.sync_detailed(client=api, body=body)
    assert answer.status_code == 200, answer.content
    approval = answer.parsed
    assert isinstance(approval, models.Approval)
    assert approval.decision.value == "approved"
    assert approval.decisions[0].comment == "go ahead"
    consumed = consume_approval.sync_detailed(
        approval.interaction_id,
        client=api,
        body=models.ConsumeRequest(action_digest=approval.action_digest),
    )
    assert consumed.status_code == 200, consumed.content
    assert consumed.parsed.consumed is True
