"""Tool construction: recipients, bounds, schemas, toolkit, import isolation (no service)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from lc_helpers import model_schema, properties
from pydantic import ValidationError

from humanwire.langchain import (
    AskHumanChannel,
    AskHumanEmail,
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
    assert AskHumanEmail().to == "human@example.com"
    assert HumanForm().to == "+12025550100"
    assert HumanForm(channel="slack").to == "U0HUMAN0001"
    assert CallHuman().to == "+12025550100"


def test_environment_recipients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANWIRE_SMS_TO", "+442079460001")
    monkeypatch.setenv("HUMANWIRE_WHATSAPP_TO", "+442079460002")
    monkeypatch.setenv("HUMANWIRE_SLACK_TO", "C0OPS00001")
    monkeypatch.setenv("HUMANWIRE_EMAIL_TO", "ops@example.com")
    assert AskHumanEmail().to == "ops@example.com"
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
        (lambda: AskHumanEmail(), "HUMANWIRE_EMAIL_TO"),
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
    assert (form.wait_time, form.follow_up_time) == (None, 600)


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
    assert "Slack member ID" in exposed["properties"]["to"]["description"]
    assert properties(CallHuman()) == {"prompt"}
    check = model_schema(CheckHumanInteraction())
    assert set(check["properties"]) == {"interaction_id"}
    channel = AskHumanChannel(channel_id="ch_" + "a" * 24)
    assert "channel_id" not in model_schema(channel)["properties"]
    for tool in (AskHumanSMS(), HumanForm(), CallHuman(), NotifyHumanSMS()):
        assert tool.response_format == "content_and_artifact"
        assert tool.handle_tool_error is True
        assert tool.description


def _walk(node: object) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


ALL_TOOLS = [
    lambda: AskHumanSMS(),
    lambda: AskHumanSlack(expose_recipient=True),
    lambda: NotifyHumanSMS(expose_recipient=True),
    lambda: HumanForm(),
    lambda: HumanForm(channel="slack", expose_recipient=True),
    lambda: HumanForm(title="T", fields=[{"id": "a", "label": "A", "type": "text"}]),
    lambda: CallHuman(expose_recipient=True),
    lambda: CheckHumanInteraction(),
]


@pytest.mark.parametrize("build", ALL_TOOLS)
def test_model_schemas_are_plain_and_described(build: object) -> None:
    tool = build()  # type: ignore[operator]
    schema = model_schema(tool)
    for node in _walk(schema):
        # Small models fill flat schemas: no references, no unions with null.
        assert "$ref" not in node and "$defs" not in node and "anyOf" not in node, node
    for name, prop in schema.get("properties", {}).items():
        assert prop.get("description"), f"{tool.name}.{name} has no description"


def test_dynamic_form_fields_are_inline_and_simple() -> None:
    fields = model_schema(HumanForm())["properties"]["fields"]
    item = fields["items"]
    assert item["required"] == ["label"]
    assert item["properties"]["options"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": item["properties"]["options"]["description"],
    }
    assert "select" in item["properties"]["type"]["enum"]
    assert (fields["minItems"], fields["maxItems"]) == (1, 30)


def test_descriptions_say_what_comes_back() -> None:
    ask = AskHumanSMS(wait_time=45)
    assert "45 seconds" in ask.description and "normal" in ask.description
    note = model_schema(NotifyHumanSMS())["properties"]["message"]["description"]
    assert "do not ask a question" in note
    asking = model_schema(AskHumanSMS())["properties"]["message"]["description"]
    assert "question" in asking and "do not ask" not in asking
    assert "summary" in CallHuman().description
    later = CallHuman(wait_for_call_end=False).description
    assert "summary" not in later and "interaction id" in later
    fixed = HumanForm(
        title="Swag", fields=[{"id": "size", "label": "T-shirt size", "type": "text"}]
    )
    assert "'Swag' (T-shirt size)" in fixed.description
    assert "interaction id" in HumanForm(wait_time=None, follow_up_time=60).description
    custom = AskHumanSMS(description="Ask the on-call engineer.")
    assert custom.description == "Ask the on-call engineer."


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


_BLOCKER = """
import sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
import humanwire  # the core needs no framework
try:
    {statement}
except ImportError as exc:
    print("IMPORT-ERROR:", exc)
"""


@pytest.mark.parametrize(
    ("blocked", "statement", "package"),
    [
        (("langchain_core", "langgraph"), "import humanwire.langchain", "langchain-core"),
        (("langgraph",), "from humanwire.langchain import ApprovalCheckpoint", "LangGraph"),
        (("langgraph",), "from humanwire.langchain import HumanInTheLoopApprover", "LangGraph"),
    ],
)  # fmt: skip
def test_missing_extra_gives_install_hint(
    blocked: tuple[str, ...], statement: str, package: str
) -> None:
    code = _BLOCKER.format(blocked=set(blocked), statement=statement)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert f"IMPORT-ERROR: humanwire.langchain needs {package}" in result.stdout
    assert 'pip install "humanwire[langchain]"' in result.stdout
