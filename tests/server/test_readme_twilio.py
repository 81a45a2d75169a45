"""The README's "Going live with Twilio" configuration is a working one."""

from __future__ import annotations

import re
from pathlib import Path

from humanwire.server.config import channel_routes
from humanwire.server.settings import load_settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_toml_passes_validation_and_routes_to_twilio(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Going live with Twilio", 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block is not None
    path = tmp_path / "humanwire.toml"
    path.write_text(block.group(1), encoding="utf-8")
    config = load_settings(path, {}, {}).to_service_config()
    assert channel_routes(config) == {
        "sms": "twilio",
        "whatsapp": "twilio",
        "slack": "sandbox",
        "call": "twilio",
    }
    assert config.twilio is not None and config.twilio.numbers
    assert set(config.twilio.whatsapp_templates) == {"notification", "request", "form"}
