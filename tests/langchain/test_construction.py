"""Tool construction: recipients, bounds, schemas, toolkit, import isolation (no service)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from lc_helpers import model_schema, properties
from pydantic import ValidationError

from humanwire.langchain import (
    AskHumanChannel,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CallHuman,
    CheckHumanInteraction,
    HumanForm,
    HumanWireToolkit,
    NotifyHumanSMS,
)

REMOTE = "https://humanwire.example.com"


def test_no_argument_tools_use_the_embedded_default_human() -> None:
    assert AskHumanSMS().to == "+12025550100"
    assert AskHumanWhatsApp().to == "+12025550100"
    assert AskHumanSlack().to == "U0HUMAN0001"
    assert HumanForm().to == "+12025550100"
    assert HumanForm(channel="slack").to == "U0HUMAN0001"
    assert CallHuman().to == "+12025550100"


def test_environment_recipients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANWIRE_SMS_TO", "+442079460001")
    monkeypatch.setenv("HUMANWIRE_WHATSAPP_TO", "+442079460002")
    monkeypatch.setenv("HUMANWIRE_SLACK_TO", "C0OPS00001")
    assert AskHumanSMS().to == "+442079460001"
    assert AskHumanWhatsApp().to == "+442079460002"
    assert AskHumanSlack().to == "C0OPS00001"
    assert HumanForm(channel="whatsapp").to == "+442079460002"
    assert AskHumanSMS(to="+442079460009").to == "+442079460009"


@pytest.mark.parametrize(
    ("build", "variable"),
    [
        (lambda: AskHumanSMS(), "HUMANWIRE_SMS_TO"),
        (lambda: AskHumanWhatsApp(), "HUMANWIRE_WHATSAPP_TO"),
        (lambda: AskHumanSlack(), "HUMANWIRE_SLACK_TO"),
        (lambda: HumanForm(channel="slack"), "HUMANWIRE_SLACK_TO"),
        (lambda: CallHuman(), "HUMANWIRE_SMS_TO"),
    ],
)
def test_remote_service_without_recipient_fails_at_construction(
    monkeypatch: pytest.MonkeyPatch, build: object, variable: str
) -> None:
    monkeypatch.setenv("HUMANWIRE_BASE_URL", REMOTE)
    with pytest.raises(ValidationError, match=variable):
        build()  # type: ignore[operator]


@pytest.mark.parametrize(
    "options",
    [
        {"wait_time": 0},
        {"wait_time": 601},
        {"follow_up_time": 0},
        {"follow_up_time": 60001},
        {"wait_time": "soon"},
    ],
)
def test_window_bounds_are_checked_at_construction(options: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match=r"wait_time|follow_up_time"):
        AskHumanSMS(**options)
    with pytest.raises(ValidationError):
        HumanForm(**options)
    with pytest.raises(ValidationError):
        HumanWireToolkit(**options).get_tools()


def test_form_configuration_errors() -> None:
    with pytest.raises(ValidationError, match="both title and fields"):
        HumanForm(title="Only a title")
    with pytest.raises(ValidationError, match="wait_time, follow_up_time or both"):
        HumanForm(wait_time=None)
    with pytest.raises(ValidationError, match="channel"):
        HumanForm(channel="fax")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        HumanForm(title="T", fields=[{"id": "a b", "label": "A", "type": "text"}])
    form = HumanForm(wait_time=None, follow_up_time=600)
    assert form.windows() == {"follow_up_time": 600}


def test_call_options_are_checked_at_construction() -> None:
    with pytest.raises(ValidationError):
        CallHuman(voice="robot")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        CallHuman(language="english please")
    with pytest.raises(ValidationError):
        CallHuman(transfer_to="12345")
    assert CallHuman(language="fr-FR", voice="male").language == "fr-FR"


def test_schemas_the_model_reads() -> None:
    assert properties(AskHumanSMS()) == {"message"}
    exposed = model_schema(AskHumanSlack(expose_recipient=True))
    assert "Slack member id" in exposed["properties"]["to"]["description"]
    assert properties(CallHuman()) == {"prompt"}
    check = model_schema(CheckHumanInteraction())
    assert set(check["properties"]) == {"interaction_id"}
    channel = AskHumanChannel(channel_id="ch_" + "a" * 24)
    assert "channel_id" not in model_schema(channel)["properties"]
    for tool in (AskHumanSMS(), HumanForm(), CallHuman(), NotifyHumanSMS()):
        assert tool.response_format == "content_and_artifact"
        assert tool.handle_tool_error is True
        assert tool.description


def test_toolkit_default_and_full() -> None:
    names = [t.name for t in HumanWireToolkit().get_tools()]
    assert names == ["ask_human_sms", "human_form", "check_human_interaction"]
    full = HumanWireToolkit(
        channels=["sms", "whatsapp", "slack"],
        slack_to="C0OPS00001",
        notify=True,
        call=True,
        channel_ids=["ch_" + "b" * 24],
        wait_time=30,
    ).get_tools()
    by_name = {t.name: t for t in full}
    assert list(by_name) == [
        "ask_human_sms",
        "ask_human_whatsapp",
        "ask_human_slack",
        "notify_human_sms",
        "notify_human_whatsapp",
        "notify_human_slack",
        "human_form",
        "ask_human_ch_" + "b" * 24,
        "call_human",
        "check_human_interaction",
    ]
    assert by_name["ask_human_slack"].to == "C0OPS00001"  # type: ignore[attr-defined]
    assert by_name["ask_human_sms"].wait_time == 30  # type: ignore[attr-defined]
    assert by_name["notify_human_sms"].wait_time is None  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match="whatsapp"):
        HumanWireToolkit(channels=["pigeon"])  # type: ignore[list-item]


def test_imports_stay_light() -> None:
    code = (
        "import sys, humanwire, humanwire.approval\n"
        "heavy = ('langchain', 'langchain_core', 'langgraph', 'llama_index', 'starlette',"
        " 'uvicorn')\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in heavy], 'core'\n"
        "import humanwire.langchain\n"
        "assert 'langgraph' not in sys.modules, 'langgraph loaded by humanwire.langchain'\n"
        "assert 'humanwire.server' not in sys.modules\n"
        "from humanwire.langchain import ApprovalCheckpoint\n"
        "assert 'langgraph' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
