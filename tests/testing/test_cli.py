"""The ``humanwire`` command: serve in a subprocess, accounts create, the demo stub."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from humanwire import cli
from humanwire.server.runtime.settings import Settings


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["HUMANWIRE_HOME"] = str(home)
    env.pop("HUMANWIRE_BASE_URL", None)
    env.pop("HUMANWIRE_API_KEY", None)
    return env


class Served:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        self.lines = [line.rstrip("\n") for line in lines]
        fields = dict(line.split(":", 1) for line in self.lines if ":" in line)
        self.base_url = fields.get("Base URL", "").strip()
        self.api_key = fields.get("API key", "").strip()
        self.inbox = fields.get("Inbox", "").strip()

    def get(self, path: str, key: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.get(f"{self.base_url}{path}", headers=headers, trust_env=False)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    processes: list[subprocess.Popen[str]] = []

    def start(*args: str, port: str = "0", env: dict[str, str] | None = None) -> Served:
        process = subprocess.Popen(
            [sys.executable, "-m", "humanwire.cli", "serve", "--port", port, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**_env(tmp_path / "home"), **(env or {})},
        )
        processes.append(process)
        return Served(process)

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_serve_prints_three_lines_and_serves(serve, tmp_path: Path, database: str) -> None:  # type: ignore[no-untyped-def]
    db = database
    served = serve("--db", db)
    assert served.lines[0].startswith("Base URL: http://127.0.0.1:"), served.lines
    assert served.api_key.startswith("hw_")
    assert served.inbox == f"{served.base_url}/inbox"
    assert served.get("/healthz").json() == {"status": "ok"}
    assert served.get("/numbers", served.api_key).status_code == 200
    assert served.get("/numbers", "hw_wrong").status_code == 401

    # Another account, created while the service runs on the same database.
    created = subprocess.run(
        [
            sys.executable,
            "-m",
            "humanwire.cli",
            "accounts",
            "create",
            "--db",
            db,
            "--name",
            "second",
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path / "home"),
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    second_key = created.stdout.strip()
    assert second_key.startswith("hw_") and second_key != served.api_key
    assert served.get("/numbers", second_key).status_code == 200

    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(20) == 0
    with pytest.raises(httpx.ConnectError):
        served.get("/healthz")


def test_sigterm_answers_held_requests_503_then_exits_0(serve, database: str) -> None:  # type: ignore[no-untyped-def]
    import threading
    import time

    served = serve("--db", database)
    headers = {"Authorization": f"Bearer {served.api_key}", "Idempotency-Key": "sigterm"}
    answers: list[httpx.Response | BaseException] = []

    def held_send() -> None:
        try:
            answers.append(
                httpx.post(
                    f"{served.base_url}/messages/sms",
                    json={"message": "Still there?", "to": "+12025550100", "waitTime": 60},
                    headers=headers,
                    timeout=30,
                    trust_env=False,
                )
            )
        except httpx.HTTPError as exc:
            answers.append(exc)

    thread = threading.Thread(target=held_send, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not served.get("/sandbox/messages", served.api_key).json():
        assert time.monotonic() < deadline, "the send was never delivered"
        time.sleep(0.05)
    time.sleep(0.1)  # delivered, then held
    served.process.send_signal(signal.SIGTERM)
    thread.join(5)
    [answer] = answers
    assert isinstance(answer, httpx.Response), answer
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "unavailable"
    assert "retry-after" in answer.headers
    assert served.process.wait(20) == 0


def test_serve_again_on_the_same_db_prints_the_same_key(serve, database: str) -> None:  # type: ignore[no-untyped-def]
    db = database
    first = serve("--db", db)
    key = first.api_key
    first.process.send_signal(signal.SIGINT)
    assert first.process.wait(20) == 0
    second = serve("--db", db)
    assert second.api_key == key
    assert second.get("/numbers", key).status_code == 200


def test_serve_with_a_given_key(serve, database: str) -> None:  # type: ignore[no-untyped-def]
    key = "hw_given_key_for_the_cli_test_000000"
    served = serve("--db", database, "--api-key", key)
    assert served.api_key == key
    assert served.get("/numbers", key).status_code == 200


def test_serve_on_the_default_db_is_found_by_embedded_mode(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    served = serve()
    home = tmp_path / "home"
    assert (home / "humanwire.db").exists()
    state = (home / "embedded.json").read_text()
    assert served.base_url in state and served.api_key in state


def test_serve_on_a_busy_port_fails_cleanly(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "humanwire.cli",
                "serve",
                "--port",
                str(port),
                "--db",
                str(tmp_path / "busy.db"),
            ],
            capture_output=True,
            text=True,
            env=_env(tmp_path / "home"),
            timeout=60,
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_demo_runs_the_demo_module(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    fake = types.ModuleType("humanwire.demo")

    def fake_main(argv: list[str] | None = None, *, auto: bool = False) -> int:
        calls.append(auto)
        return 0

    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "humanwire.demo", fake)
    assert cli.main(["demo", "--auto"]) == 0
    assert calls == [True]


def test_demo_missing_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "humanwire.demo", None)  # type: ignore[arg-type]
    assert cli.main(["demo"]) == 1
    assert "demo is not available" in capsys.readouterr().err


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["fly"])
    assert info.value.code == 2


def test_local_mode_only_on_loopback(tmp_path: Path) -> None:
    def config_for(*args: str) -> tuple[bool, str]:
        parsed = cli.build_parser().parse_args(["serve", "--db", str(tmp_path / "x.db"), *args])
        config = cli.serve_config(parsed, env={})
        return config.local_mode, config.db_path

    assert config_for() == (True, str(tmp_path / "x.db"))
    assert config_for("--host", "::1")[0] is True
    assert config_for("--host", "0.0.0.0")[0] is False
    assert config_for("--host", "192.168.1.20")[0] is False


def test_accounts_create_on_a_new_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from humanwire.server.config import ServiceConfig
    from humanwire.server.runtime.runner import ServiceRunner

    db = tmp_path / "fresh" / "accounts.db"
    assert cli.main(["accounts", "create", "--db", str(db), "--name", "ci"]) == 0
    assert cli.main(["accounts", "create", "--db", str(db)]) == 0
    keys = capsys.readouterr().out.split()
    assert len(keys) == 2 and keys[0] != keys[1]
    # The printed keys work against a service started on that database afterwards.
    with ServiceRunner(ServiceConfig(db_path=str(db))) as runner:
        assert all(runner.authenticate(key) for key in keys)


# -- settings: --config, HUMANWIRE_* and flags ------------------------------------------------
SID = "AC0123456789abcdef0123456789abcdef"
TOKEN = "tw-5ecret-token-never-printed"


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_flags_beat_environment_beat_file(tmp_path: Path) -> None:
    config = tmp_path / "humanwire.toml"
    config.write_text(
        'host = "10.1.1.1"\nport = 9001\ndb = "file.db"\nsandbox = "off"\n', encoding="utf-8"
    )
    env = {"HUMANWIRE_HOST": "0.0.0.0", "HUMANWIRE_PORT": "9002", "HUMANWIRE_SANDBOX": "on"}

    def settings_for(*flags: str) -> Settings:
        parsed = cli.build_parser().parse_args(["serve", "--config", str(config), *flags])
        return cli.serve_settings(parsed, env)

    settings = settings_for()
    assert (settings.host, settings.port, settings.sandbox) == ("0.0.0.0", 9002, True)
    assert settings.db_path == str(tmp_path / "file.db")
    settings = settings_for(
        "--host", "::1", "--port", "9003", "--sandbox", "off", "--db", ":memory:"
    )
    assert (settings.host, settings.port, settings.sandbox) == ("::1", 9003, False)
    service = settings.to_service_config()
    assert (service.local_mode, service.sandbox_enabled, service.db_path) == (
        True,
        False,
        ":memory:",
    )


def test_serve_defaults_stay_as_they_were(tmp_path: Path) -> None:
    parsed = cli.build_parser().parse_args(["serve"])
    assert (parsed.host, parsed.port, parsed.config, parsed.sandbox) == (None, None, None, None)
    settings = cli.serve_settings(parsed, {})
    assert (settings.host, settings.port, settings.sandbox) == ("127.0.0.1", cli.DEFAULT_PORT, True)


def test_serve_refuses_bad_settings_with_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "humanwire.toml"
    config.write_text(f'[twilio]\nacount_sid = "{SID}"\nauth_token = "{TOKEN}"\n', encoding="utf-8")
    db = tmp_path / "never.db"
    result = subprocess.run(
        [sys.executable, "-m", "humanwire.cli", "serve", "--config", str(config), "--db", str(db)],
        capture_output=True,
        text=True,
        env={**_env(tmp_path / "home"), "HUMANWIRE_PORT": "http"},
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert (
        "humanwire: port: must be a port number from 0 to 65535"
        " (from environment variable HUMANWIRE_PORT)"
    ) in lines
    assert (
        "humanwire: twilio.acount_sid: unknown key (did you mean twilio.account_sid?)"
        f" (in {config})"
    ) in lines
    assert TOKEN not in result.stderr
    assert not db.exists()


def test_serve_refuses_a_half_configured_provider(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "humanwire.cli", "serve", "--db", str(tmp_path / "x.db")],
        capture_output=True,
        text=True,
        env={
            **_env(tmp_path / "home"),
            "HUMANWIRE_TWILIO_ACCOUNT_SID": SID,
            "HUMANWIRE_TWILIO_SMS_FROM": "+14155550100",
        },
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(
        "humanwire: twilio is half-configured: missing twilio.auth_token"
    ), result.stderr
    assert "humanwire: twilio needs public_url" in result.stderr


def test_serve_with_twilio_configured_says_where_channels_go_and_never_the_token(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    port = _free_port()
    closed = _free_port()  # nothing listens there: start-up must not call Twilio
    config = tmp_path / "humanwire.toml"
    config.write_text(
        f"""
port = {port}
db = "served.db"
public_url = "http://127.0.0.1:{port}"
sandbox = "off"

[twilio]
account_sid = "{SID}"
api_base = "http://127.0.0.1:{closed}"
sms_from = "+14155550100"
numbers = ["+14155550102"]
""",
        encoding="utf-8",
    )
    served = serve(
        "--config",
        str(config),
        port=str(port),  # the flag agrees with the file: the fixture always passes one
        env={"HUMANWIRE_TWILIO_AUTH_TOKEN": TOKEN},
    )
    assert served.base_url == f"http://127.0.0.1:{port}", served.lines
    assert served.api_key.startswith("hw_")
    assert served.get("/healthz").json() == {"status": "ok"}
    assert served.get("/numbers", served.api_key).status_code == 200
    # sandbox = "off": no sandbox API.
    assert served.get("/sandbox/messages", served.api_key).status_code == 404
    assert (tmp_path / "served.db").exists()  # relative to the file

    served.process.send_signal(signal.SIGTERM)
    out, err = served.process.communicate(timeout=20)
    assert served.process.returncode == 0, err
    lines = [line.strip() for line in err.splitlines()]
    assert (
        f"sms       → Twilio (from +14155550100; account AC01…; api http://127.0.0.1:{closed})"
        in lines
    )
    assert "whatsapp  → sandbox (no twilio.whatsapp_from)" in lines
    assert "call      → sandbox (no voice.model: calls stay on the sandbox)" in lines
    assert "slack     → sandbox (no slack)" in lines
    assert "sandbox   off (no sandbox API, no human side in the inbox)" in lines
    assert f"public url http://127.0.0.1:{port}" in lines
    everything = "\n".join(served.lines) + out + err
    assert TOKEN not in everything and "5ecret" not in everything
    assert SID not in everything


def test_serve_with_twilio_and_telnyx_says_which_carrier_carries_what(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    port = _free_port()
    closed = _free_port()  # nothing listens there: the carriers are unverified, not called
    telnyx_key = "KEY" + "5ecret" * 5
    config = tmp_path / "humanwire.toml"
    config.write_text(
        f"""
port = {port}
db = "served.db"
public_url = "http://127.0.0.1:{port}"

[twilio]
account_sid = "{SID}"
api_base = "http://127.0.0.1:{closed}"
sms_from = "+14155550100"

[telnyx]
public_key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
api_base = "http://127.0.0.1:{closed}/v2"
sms_from = "+13125550100"
numbers = ["+13125550102"]

[telephony]
order = ["telnyx", "twilio"]
""",
        encoding="utf-8",
    )
    served = serve(
        "--config",
        str(config),
        port=str(port),
        env={"HUMANWIRE_TWILIO_AUTH_TOKEN": TOKEN, "HUMANWIRE_TELNYX_API_KEY": telnyx_key},
    )
    assert served.get("/healthz").json() == {"status": "ok"}
    served.process.send_signal(signal.SIGTERM)
    out, err = served.process.communicate(timeout=20)
    assert served.process.returncode == 0, err
    lines = [line.strip() for line in err.splitlines()]
    assert f"sms       → Telnyx (from +13125550100; api http://127.0.0.1:{closed}/v2)" in lines
    assert "sms       → Twilio for its own numbers (+14155550100)" in lines
    assert "numbers   Twilio (no pool; buying off)" in lines
    assert "numbers   Telnyx (pool of 1; buying off)" in lines
    everything = "\n".join(served.lines) + out + err
    assert TOKEN not in everything and "5ecret" not in everything
