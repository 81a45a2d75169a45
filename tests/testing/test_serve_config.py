"""``humanwire serve``'s configuration end to end: ``--print-config`` through the real
command, the tunables a real ``humanwire serve`` process is given (environment, file)
actually used over HTTP, and the systemd unit docs/operating/systemd.md shows."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from docs_support import block
from humanwire import HumanWire, cli
from humanwire.server.runtime.settings import env_var_names
from humanwire.testing import WebhookReceiver

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "docs" / "operating" / "humanwire.service"
HUMAN = "+12025550100"
SHARED_SMS = "+12025550199"
TOKEN = "tok-5ecret-d0-not-print"
SIGNING = "signing-5ecret-value"
DB_PASSWORD = "db-5ecret-pw"
API_KEY = "hw_api-5ecret-key"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUMANWIRE_")}
    return {**env, "HUMANWIRE_HOME": str(home), **extra}


# -- --print-config ----------------------------------------------------------------------------
def test_print_config_shows_every_key_its_source_and_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    for name in [name for name in os.environ if name.startswith("HUMANWIRE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HUMANWIRE_HOME", str(home))
    monkeypatch.setenv("HUMANWIRE_TWILIO_AUTH_TOKEN", TOKEN)
    monkeypatch.setenv("HUMANWIRE_WEBHOOKS_MAX_ATTEMPTS", "3")
    config = tmp_path / "humanwire.toml"
    config.write_text(
        'public_url = "https://hw.example.com"\n'
        "[limits]\nrate_limit_requests = 50\n"
        '[twilio]\naccount_sid = "AC0123456789abcdef0123456789abcdef"\n'
        'sms_from = "+14155550100"\n'
        f'[slack]\nbot_token = "xoxb-1-2-3"\nsigning_secret = "{SIGNING}"\n',
        encoding="utf-8",
    )
    db = f"postgresql://hw:{DB_PASSWORD}@db.invalid:5432/hw"
    code = cli.main(
        [
            "serve",
            "--print-config",
            "--config",
            str(config),
            "--port",
            "9100",
            "--db",
            db,
            "--api-key",
            API_KEY,
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("# humanwire serve: effective configuration")
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in lines[2:]}
    shown = set(env_var_names()) - {"twilio.whatsapp_templates"}
    assert shown | {"api_key"} <= set(rows)
    assert rows["port"] == ["9100", "flag --port"]
    assert rows["limits.rate_limit_requests"] == ["50", f"file {config}"]
    assert rows["webhooks.max_attempts"] == ["3", "env HUMANWIRE_WEBHOOKS_MAX_ATTEMPTS"]
    assert rows["webhooks.timeout"] == ["10", "default"]
    assert rows["twilio.auth_token"] == ["********", "env HUMANWIRE_TWILIO_AUTH_TOKEN"]
    assert rows["slack.signing_secret"] == ["********", f"file {config}"]
    assert rows["api_key"] == ["********", "flag --api-key"]
    assert rows["db"] == ["postgresql://hw:***@db.invalid:5432/hw", "flag --db"]
    for secret in (TOKEN, SIGNING, DB_PASSWORD, API_KEY, "xoxb-1-2-3"):
        assert secret not in out
    # Nothing was opened or created: no home, no key file, no database.
    assert not home.exists()


def test_print_config_through_the_command_never_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = tmp_path / "data" / "hw.db"
    done = subprocess.run(
        [sys.executable, "-m", "humanwire.cli", "serve", "--print-config", "--db", str(db)],
        capture_output=True,
        text=True,
        env=_env(home, HUMANWIRE_SPAM_RECIPIENTS="9"),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Base URL" not in done.stdout
    assert any(
        line.split() == ["spam.recipients", "9", "env", "HUMANWIRE_SPAM_RECIPIENTS"]
        for line in done.stdout.splitlines()
    )
    assert not db.exists() and not db.parent.exists() and not home.exists()


def test_a_bad_value_stops_print_config_and_serve_alike(tmp_path: Path) -> None:
    env = _env(tmp_path / "home", HUMANWIRE_WEBHOOKS_TIMEOUT="0", HUMANWIRE_TWILIO_AUTH_TOKEN=TOKEN)
    expected = (
        "humanwire: webhooks.timeout: must be a number of seconds over 0 and at most 300"
        " (from environment variable HUMANWIRE_WEBHOOKS_TIMEOUT)"
    )
    for extra in (["--print-config"], []):
        done = subprocess.run(
            [sys.executable, "-m", "humanwire.cli", "serve", "--port", "0", *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 2, (extra, done.stdout, done.stderr)
        assert expected in done.stderr.splitlines()
        assert done.stdout == ""
        assert TOKEN not in done.stderr


# -- tunables a real serve uses -----------------------------------------------------------------
class Served:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        assert process.stdout is not None
        fields = dict(
            line.rstrip("\n").split(":", 1) for line in (process.stdout.readline() for _ in "abc")
        )
        self.base_url = fields.get("Base URL", "").strip()
        self.api_key = fields.get("API key", "").strip()
        assert self.base_url, process.stderr.read() if process.stderr else ""

    def http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.api_key}"},
            trust_env=False,
            timeout=30,
        )


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    processes: list[subprocess.Popen[str]] = []

    def start(*args: str, **env: str) -> Served:
        process = subprocess.Popen(
            [sys.executable, "-m", "humanwire.cli", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(tmp_path / "home", **env),
        )
        processes.append(process)
        return Served(process)

    yield start
    for process in processes:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def test_the_rate_limit_from_the_environment_is_enforced(serve: Any, database: str) -> None:
    served = serve("--db", database, HUMANWIRE_LIMITS_RATE_LIMIT_REQUESTS="3")
    with served.http() as http:
        answers = [http.get("/numbers") for _ in range(4)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    limited = answers[3]
    assert limited.json()["error"]["code"] == "rate_limited"
    assert "rate limit of 3 requests per 60 s" in limited.json()["error"]["message"]
    assert int(limited.headers["retry-after"]) >= 1


def test_webhook_attempts_and_retry_delay_from_the_file(
    serve: Any, database: str, tmp_path: Path
) -> None:
    config = tmp_path / "humanwire.toml"
    config.write_text(
        "[webhooks]\nmax_attempts = 3\nretry_base = 0.05\ntimeout = 2\n", encoding="utf-8"
    )
    served = serve("--db", database, "--config", str(config))
    with WebhookReceiver() as receiver:
        receiver.set_status(500)  # every delivery fails: the service retries, then gives up
        client = HumanWire(api_key=served.api_key, base_url=served.base_url, max_retries=0)
        try:
            receiver.register(client, ["message.received"])
            sent = client.messages.sms(message="Deploy?", to=HUMAN, follow_up_time=60)
            with served.http() as http:
                reply = http.post(
                    "/sandbox/replies",
                    json={"channel": "sms", "from": HUMAN, "to": SHARED_SMS, "body": "yes"},
                )
            assert reply.status_code == 204, reply.text
            deadline = time.monotonic() + 10
            while len(receiver.deliveries) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            first_three = list(receiver.deliveries)
            time.sleep(2.0)  # the default (8 attempts) would retry again within this
            after = list(receiver.deliveries)
        finally:
            client.close()
    assert len(first_three) == 3, first_three
    assert len(after) == 3, [d.event_id for d in after]
    assert {d.event_id for d in after} == {first_three[0].event_id}  # one event, retried
    assert sent.interaction_id in first_three[0].body.decode()


# -- the systemd unit ---------------------------------------------------------------------------
def test_the_systemd_unit_runs_serve_with_the_config_and_is_in_the_readme(tmp_path: Path) -> None:
    text = UNIT.read_text(encoding="utf-8")
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(text)
    service = unit["Service"]
    command = shlex.split(service["ExecStart"])
    assert command[0].endswith("/bin/humanwire") and command[1] == "serve"
    args = cli.build_parser().parse_args(command[1:])
    assert args.config == "/etc/humanwire/humanwire.toml"
    assert service["KillSignal"] == "SIGTERM"  # the graceful stop
    assert service["RestartPreventExitStatus"] == "2"  # what serve exits with on bad settings
    # A descriptor per connection: far above systemd's default of 1,024.
    assert int(service["LimitNOFILE"]) >= 65536
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    assert block("operating/systemd.md", None, "ini") == text
    analyze = shutil.which("systemd-analyze")
    if analyze is not None:
        # systemd's own check, with ExecStart pointing at this install of humanwire.
        local = tmp_path / "humanwire.service"
        local.write_text(text.replace(command[0], shutil.which("humanwire") or command[0]))
        done = subprocess.run(
            [analyze, "verify", str(local)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
