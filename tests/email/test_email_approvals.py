"""Email approvers, end to end over real SMTP on loopback, on each store: the service
emails the approver through a relay of the test's; they decide by a signed link (a
confirmation post on the service) or by a reply into the service's listener, which
decides only when its DKIM signature verifies for their domain (signed here with a key
the test makes, its public half served by the injected key lookup)."""

from __future__ import annotations

import asyncio
import base64
import re
import time
from collections.abc import Callable, Iterator
from email.message import EmailMessage
from email.policy import SMTP
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlparse

import aiosmtplib
import dkim
import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from test_email_service import ADA, DOMAIN, EmailLive, email_live  # noqa: F401

from humanwire.testing.email import RelayedMail

BOB = "bob@example.com"
HUMAN = "+12025550199"
ACTION = {"name": "wire_money", "arguments": {"amount": 4200, "to": "ACME Ltd"}}
_LINK = re.compile(r"https?://\S+/a/[A-Za-z0-9_-]+/(approve|reject)\?signature=[0-9a-f]+")


@pytest.fixture(scope="module")
def signing_key() -> tuple[bytes, dict[bytes, bytes]]:
    """A DKIM key of example.com's: the private half, and the DNS record of its public."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    record = b"v=DKIM1; k=rsa; p=" + base64.b64encode(public)
    return pem, {b"sel._domainkey.example.com.": record}


@pytest.fixture
def live(email_live: EmailLive, signing_key: tuple[bytes, dict[bytes, bytes]]) -> EmailLive:  # noqa: F811
    records = signing_key[1]

    def lookup(name: bytes, timeout: float = 5) -> bytes | None:
        return records.get(name)

    email_live.runner.engine.providers["email"].dkim_dns = lookup  # type: ignore[attr-defined]
    return email_live


@pytest.fixture
def api(live: EmailLive) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=live.runner.base_url,
        headers={"Authorization": f"Bearer {live.key}"},
        timeout=30,
        trust_env=False,
    ) as client:
        yield client


def _ask(api: httpx.Client, **body: Any) -> dict[str, Any]:
    response = api.post("/approvals", json={"followUpTime": 60, **body})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _links(mail: RelayedMail) -> dict[str, str]:
    """The approve / reject links of an approver's email, as paths on the service."""
    found = {m.group(1): m.group(0) for m in _LINK.finditer(mail.text)}
    assert set(found) == {"approve", "reject"}, mail.text
    return {d: (lambda u: f"{u.path}?{u.query}")(urlparse(url)) for d, url in found.items()}


def _use(api: httpx.Client, link: str, comment: str = "") -> httpx.Response:
    """Opens a link (its confirmation page), then confirms (the form's post)."""
    page = api.get(link)
    assert page.status_code == 200, page.text
    signature = re.search(r'name="signature" value="([0-9a-f]+)"', page.text)
    assert signature is not None, page.text
    return api.post(
        link.split("?")[0],
        data={"signature": signature.group(1), "comment": comment},
        follow_redirects=True,
    )


def _until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


def _signed(pem: bytes, message: EmailMessage) -> bytes:
    raw = message.as_bytes(policy=SMTP)
    return dkim.sign(raw, b"sel", b"example.com", pem, include_headers=[b"from", b"to"]) + raw  # type: ignore[arg-type]


def _deliver_raw(live: EmailLive, raw: bytes, to: str) -> None:
    asyncio.run(
        aiosmtplib.send(
            raw,
            sender=ADA,
            recipients=[to],
            hostname="127.0.0.1",
            port=live.listener_port,
            start_tls=False,
            timeout=10,
        )
    )


def test_a_signed_link_decides_once_and_only_for_its_approver(
    live: EmailLive, api: httpx.Client
) -> None:
    asked = _ask(
        api,
        title="Wire $4,200 to ACME",
        description="Invoice 881, due Friday.",
        action=ACTION,
        approvers=[{"channel": "email", "to": ADA}, {"channel": "email", "to": BOB}],
        quorum=2,
    )
    assert asked["status"] == "pending" and asked["links"] == []
    ada, bob = live.sent(1), live.sent(2)
    assert {ada.recipients, bob.recipients} == {(ADA,), (BOB,)}
    if ada.recipients != (ADA,):
        ada, bob = bob, ada
    assert str(ada.message["Subject"]) == "Approval requested: Wire $4,200 to ACME"
    assert ada.message.get_content_type() == "multipart/alternative"
    text = ada.text.replace("\r\n", "\n")
    assert "Invoice 881, due Friday." in text
    assert "Action: wire_money\n  amount: 4200\n  to: ACME Ltd" in text
    assert "reply to this email with YES or NO" in text
    assert re.search(r"decisions so far: \S+/a/[A-Za-z0-9_-]+\n", text)  # the page's link
    ada_links, bob_links = _links(ada), _links(bob)
    assert f'href="{live.runner.engine.config.public_url.rstrip("/")}' in ada.html
    path = f"/approvals/{asked['interactionId']}"

    # Opening a link (a mail scanner fetching it) decides nothing.
    assert "Confirm: Approve" in api.get(ada_links["approve"]).text
    assert api.get(path).json()["decisions"] == []
    # Edited links lead nowhere: another decision, another approver's token.
    ada_token = ada_links["approve"].split("/")[2]
    bob_token = bob_links["reject"].split("/")[2]
    assert api.get(ada_links["approve"].replace("/approve?", "/reject?")).status_code == 404
    assert api.get(bob_links["reject"].replace(bob_token, ada_token)).status_code == 404
    forged = api.post(
        f"/a/{ada_token}/reject", data={"signature": bob_links["reject"].split("=")[1]}
    )
    assert forged.status_code == 404

    done = _use(api, ada_links["approve"], comment="Checked the invoice")
    assert "your decision was recorded" in done.text
    [decision] = api.get(path).json()["decisions"]
    assert decision["approver"] == {"channel": "email", "to": ADA}
    assert (decision["via"], decision["comment"]) == ("email_link", "Checked the invoice")
    # Single use: a second use shows the decision recorded and changes nothing.
    again = api.get(ada_links["approve"])
    assert "You decided already" in again.text and "You approved it." in again.text
    assert "Confirm" not in api.get(ada_links["reject"]).text
    posted = api.post(
        ada_links["reject"].split("?")[0],
        data={"signature": ada_links["reject"].split("=")[1]},
        follow_redirects=True,
    )
    assert "You decided already" in posted.text
    assert len(api.get(path).json()["decisions"]) == 1

    _use(api, bob_links["reject"])
    decided = api.get(path).json()
    assert (decided["status"], decided["decision"]) == ("ended", "rejected")
    assert [d["via"] for d in decided["decisions"]] == ["email_link", "email_link"]


def test_a_dkim_signed_reply_decides(
    live: EmailLive, api: httpx.Client, signing_key: tuple[bytes, dict[bytes, bytes]]
) -> None:
    asked = _ask(api, title="Ship the release", approvers=[{"channel": "email", "to": ADA}])
    mail = live.sent()
    reply = live.reply(mail, "YES, the notes look right")
    _deliver_raw(live, _signed(signing_key[0], reply), str(mail.message["Reply-To"]))
    decided = _until(lambda: api.get(f"/approvals/{asked['interactionId']}").json()["decision"])
    assert decided == "approved"
    [decision] = api.get(f"/approvals/{asked['interactionId']}").json()["decisions"]
    assert (decision["via"], decision["comment"]) == ("email_reply", "the notes look right")
    time.sleep(0.3)
    assert len(live.relay.messages) == 1  # nothing sent back


def test_an_unsigned_reply_gets_the_links_back(
    live: EmailLive, api: httpx.Client, signing_key: tuple[bytes, dict[bytes, bytes]]
) -> None:
    asked = _ask(api, title="Ship the release", approvers=[{"channel": "email", "to": ADA}])
    mail = live.sent()
    live.deliver(live.reply(mail, "YES"))  # anyone can write this From
    back = live.sent(2)
    assert back.recipients == (ADA,)
    assert str(back.message["Subject"]) == "Re: Ship the release"
    assert "did not decide" in back.text
    assert _links(back) == _links(mail)
    # Signed for the domain but from another address of it: no decision either.
    other = live.reply(mail, "YES")
    other.replace_header("From", "Eve <eve@example.com>")
    _deliver_raw(live, _signed(signing_key[0], other), str(mail.message["Reply-To"]))
    live.sent(3)
    # Signed, but no YES / NO: the links again.
    _deliver_raw(
        live, _signed(signing_key[0], live.reply(mail, "Maybe?")), str(mail.message["Reply-To"])
    )
    assert "did not decide" in live.sent(4).text
    # At most three answers (an auto-responder that does not say so cannot ping-pong).
    live.deliver(live.reply(mail, "Out of the office"))
    time.sleep(0.5)
    assert len(live.relay.messages) == 4
    approval = api.get(f"/approvals/{asked['interactionId']}").json()
    assert (approval["status"], approval["decisions"]) == ("pending", [])


def test_quorum_of_an_email_approver_and_an_sms_one(live: EmailLive, api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Refund $900",
        approvers=[{"channel": "email", "to": ADA}, {"channel": "sms", "to": HUMAN}],
        quorum=2,
        remindEvery=1,
    )
    mail = live.sent()
    # Reminders reach the email approver as the sms one.
    reminder = live.sent(2)
    assert str(reminder.message["Subject"]) == "Reminder: Refund $900"
    assert _links(reminder) == _links(mail)
    _use(api, _links(mail)["approve"])
    path = f"/approvals/{asked['interactionId']}"
    assert api.get(path).json()["status"] == "pending"  # one of two
    texts = _until(lambda: api.get("/sandbox/messages", params={"to": HUMAN}).json())
    sent = api.post(
        "/sandbox/replies",
        json={"channel": "sms", "from": HUMAN, "to": texts[-1]["from"], "body": "yes"},
    )
    assert sent.status_code == 204, sent.text
    decided = api.get(path).json()
    assert decided["decision"] == "approved"
    assert [d["via"] for d in decided["decisions"]] == ["email_link", "sandbox"]


def test_escalation_reaches_an_email_approver(live: EmailLive, api: httpx.Client) -> None:
    asked = _ask(
        api,
        title="Refund $900",
        approvers=[{"channel": "sms", "to": HUMAN}],
        escalation=[{"after": 1, "approvers": [{"channel": "email", "to": ADA}]}],
    )
    lead = live.sent()
    assert lead.recipients == (ADA,)
    assert str(lead.message["Subject"]) == "Approval requested: Refund $900"
    _use(api, _links(lead)["reject"])
    decided = api.get(f"/approvals/{asked['interactionId']}").json()
    assert decided["decision"] == "rejected"
    assert decided["decisions"][0]["approver"] == {"channel": "email", "to": ADA}


def test_without_email_set_up_an_email_approver_is_refused(
    live: EmailLive, api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A carrier's provider carrying the email channel: it has no email sender.
    monkeypatch.setitem(live.runner.engine.providers, "email", SimpleNamespace(senders={}))
    response = api.post(
        "/approvals",
        json={
            "title": "Refund",
            "approvers": [{"channel": "sms", "to": HUMAN}],
            "escalation": [{"after": 60, "approvers": [{"channel": "email", "to": ADA}]}],
            "followUpTime": 60,
        },
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["field"] == "escalation[0].approvers[0].channel"
    assert "email" in error["message"]
    assert api.get("/sandbox/messages", params={"to": HUMAN}).json() == []
