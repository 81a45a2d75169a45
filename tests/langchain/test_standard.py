"""langchain-tests' standard suites (ToolsUnitTests, ToolsIntegrationTests) for every
humanwire tool; the integration suites run against the real service, the scripted human
answering each invocation."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from lc_helpers import PHONE

from humanwire import AsyncHumanWire, HumanWire
from humanwire.langchain import (
    AskHumanChannel,
    AskHumanSlack,
    AskHumanSMS,
    AskHumanWhatsApp,
    CallHuman,
    CheckHumanInteraction,
    HumanForm,
    NotifyHumanSlack,
    NotifyHumanSMS,
    NotifyHumanWhatsApp,
)
from humanwire.testing import ScriptedHuman

FIXED_FORM = {
    "title": "Approve the budget",
    "fields": [{"id": "ok", "label": "Approved", "type": "checkbox"}],
}
DYNAMIC_EXAMPLE = {
    "title": "Preferences",
    "fields": [{"id": "colour", "label": "Colour", "type": "select", "options": ["Red"]}],
}


class _Spec:
    """One tool's parameters for both suites."""

    tool_class: ClassVar[type[BaseTool]]
    options: ClassVar[dict[str, Any]] = {}
    example: ClassVar[dict[str, Any]] = {"message": "Can you confirm?"}
    env: ClassVar[tuple[dict[str, str], dict[str, Any], dict[str, Any]]] = ({}, {}, {})

    @property
    def tool_constructor(self) -> type[BaseTool]:
        return self.tool_class

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return dict(self.options)

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return dict(self.example)

    @property
    def init_from_env_params(self) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
        return self.env


class _Integration(_Spec, ToolsIntegrationTests):
    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        """Script the human's answer; extra constructor options for this test."""
        return {}

    @pytest.fixture
    def tool(
        self,
        humanwire_client: HumanWire,
        async_humanwire_client: AsyncHumanWire,
        human: ScriptedHuman,
    ) -> BaseTool:
        extra = self.script(human, humanwire_client)
        return self.tool_class(
            client=humanwire_client,
            async_client=async_humanwire_client,
            **{**self.options, **extra},
        )


def _env(variable: str, value: str) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    return {variable: value}, {}, {"to": value}


# --- ask ----------------------------------------------------------------------------------
class _AskSMS(_Spec):
    tool_class = AskHumanSMS
    options: ClassVar[dict[str, Any]] = {"wait_time": 5}
    env = _env("HUMANWIRE_SMS_TO", "+442079460001")


class TestAskHumanSMSUnit(_AskSMS, ToolsUnitTests):
    pass


class TestAskHumanSMSIntegration(_AskSMS, _Integration):
    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        human.reply("confirmed")
        return {}


class _AskWhatsApp(_Spec):
    tool_class = AskHumanWhatsApp
    options: ClassVar[dict[str, Any]] = {"wait_time": 5}
    env = _env("HUMANWIRE_WHATSAPP_TO", "+442079460002")


class TestAskHumanWhatsAppUnit(_AskWhatsApp, ToolsUnitTests):
    pass


class TestAskHumanWhatsAppIntegration(_AskWhatsApp, _Integration):
    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        human.reply("confirmed", channel="whatsapp")
        return {}


class _AskSlack(_Spec):
    tool_class = AskHumanSlack
    options: ClassVar[dict[str, Any]] = {"wait_time": 5}
    env = _env("HUMANWIRE_SLACK_TO", "C0OPS00001")


class TestAskHumanSlackUnit(_AskSlack, ToolsUnitTests):
    pass


class TestAskHumanSlackIntegration(_AskSlack, _Integration):
    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        human.reply("confirmed", channel="slack")
        return {}


# --- notify -------------------------------------------------------------------------------
class _NotifySMS(_Spec):
    tool_class = NotifyHumanSMS
    env = _env("HUMANWIRE_SMS_TO", "+442079460003")


class TestNotifyHumanSMSUnit(_NotifySMS, ToolsUnitTests):
    pass


class TestNotifyHumanSMSIntegration(_NotifySMS, _Integration):
    pass


class _NotifyWhatsApp(_Spec):
    tool_class = NotifyHumanWhatsApp


class TestNotifyHumanWhatsAppUnit(_NotifyWhatsApp, ToolsUnitTests):
    pass


class TestNotifyHumanWhatsAppIntegration(_NotifyWhatsApp, _Integration):
    pass


class _NotifySlack(_Spec):
    tool_class = NotifyHumanSlack


class TestNotifyHumanSlackUnit(_NotifySlack, ToolsUnitTests):
    pass


class TestNotifyHumanSlackIntegration(_NotifySlack, _Integration):
    pass


# --- channel card -------------------------------------------------------------------------
class _Channel(_Spec):
    tool_class = AskHumanChannel
    options: ClassVar[dict[str, Any]] = {"channel_id": "ch_" + "a" * 24}


class TestAskHumanChannelUnit(_Channel, ToolsUnitTests):
    pass


class TestAskHumanChannelIntegration(_Channel, _Integration):
    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        card = client.channels.create(type="sms", to=PHONE, wait_time=5)
        human.reply("confirmed")
        return {"channel_id": card.id}


# --- forms --------------------------------------------------------------------------------
class _FixedForm(_Spec):
    tool_class = HumanForm
    options: ClassVar[dict[str, Any]] = {**FIXED_FORM, "wait_time": 5}
    example: ClassVar[dict[str, Any]] = {"message": "Please check: {{url}}"}
    env = _env("HUMANWIRE_SMS_TO", "+442079460004")


class TestFixedHumanFormUnit(_FixedForm, ToolsUnitTests):
    pass


class TestFixedHumanFormIntegration(_FixedForm, _Integration):
    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        human.fill_form({"ok": True})
        return {}


class _DynamicForm(_Spec):
    tool_class = HumanForm
    options: ClassVar[dict[str, Any]] = {"wait_time": 5}
    example = DYNAMIC_EXAMPLE


class TestDynamicHumanFormUnit(_DynamicForm, ToolsUnitTests):
    pass


class TestDynamicHumanFormIntegration(_DynamicForm, _Integration):
    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        human.fill_form({"colour": "Red"})
        return {}


# --- calls and status ---------------------------------------------------------------------
class _Call(_Spec):
    tool_class = CallHuman
    example: ClassVar[dict[str, Any]] = {"prompt": "You are Acme's assistant; confirm 3 pm."}
    env = _env("HUMANWIRE_SMS_TO", "+442079460005")


class TestCallHumanUnit(_Call, ToolsUnitTests):
    pass


class TestCallHumanIntegration(_Call, _Integration):
    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        human.answer_call("Confirmed 3 pm.")
        return {}


class _Check(_Spec):
    tool_class = CheckHumanInteraction
    example: ClassVar[dict[str, Any]] = {"interaction_id": "placeholder"}


class TestCheckHumanInteractionUnit(_Check, ToolsUnitTests):
    pass


class TestCheckHumanInteractionIntegration(_Check, _Integration):
    interaction_id: str = ""

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"interaction_id": self.interaction_id}

    def script(self, human: ScriptedHuman, client: HumanWire) -> dict[str, Any]:
        sent = client.messages.sms(to=PHONE, message="FYI")
        self.interaction_id = sent.interaction_id
        return {}
