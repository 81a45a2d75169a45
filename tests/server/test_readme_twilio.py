"""The configuration of the Twilio page (docs/going-live/twilio.md) is a working one."""

from __future__ import annotations

from pathlib import Path

from docs_support import blocks, page
from humanwire.server.config import channel_routes
from humanwire.server.runtime.settings import load_settings


def test_the_page_toml_passes_validation_and_routes_to_twilio(tmp_path: Path) -> None:
    found = blocks(page("going-live/twilio.md"), "toml")
    assert found
    path = tmp_path / "humanwire.toml"
    path.write_text(found[0], encoding="utf-8")
    config = load_settings(path, {}, {}).to_service_config()
    assert channel_routes(config) == {
        "sms": "twilio",
        "whatsapp": "twilio",
        "slack": "sandbox",
        "call": "twilio",
        "email": "sandbox",
    }
    assert config.twilio is not None and config.twilio.numbers
    assert set(config.twilio.whatsapp_templates) == {"notification", "request", "form"}
