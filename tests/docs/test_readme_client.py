"""The README's "The core client" runs as written against the loopback service: the text
sent to the number it names, the reply printed."""

from __future__ import annotations

import pytest

from docs_support import block
from humanwire.testing import ScriptedHuman


@pytest.mark.usefixtures("service_environment")
def test_the_core_client_prints_the_reply(
    capsys: pytest.CaptureFixture[str], human: ScriptedHuman
) -> None:
    code = block("README.md", "The core client", "python")
    reply = human.reply("yes")
    exec(compile(code, "README-core-client", "exec"), {})
    assert reply.wait(10).text == "Ship it?"
    assert capsys.readouterr().out.strip() == "True yes Human response: yes"
