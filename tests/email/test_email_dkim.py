"""DKIM: a key made here signs; its public half is served from a dict (the injected DNS)."""

from __future__ import annotations

import base64

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from humanwire.server.delivery.email import dkim_verifies, dkim_verifies_async

MESSAGE = (
    b"From: Ada <ada@acme.example>\r\n"
    b"To: reply+tok_known000000001@replies.hw.example\r\n"
    b"Subject: Re: Approve the payment?\r\n"
    b"Message-ID: <m1@acme.example>\r\n"
    b"\r\n"
    b"approve\r\n"
)


@pytest.fixture(scope="module")
def key() -> tuple[bytes, dict[bytes, bytes]]:
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
    return pem, {b"sel._domainkey.acme.example.": record}


def _dns(records: dict[bytes, bytes]):  # type: ignore[no-untyped-def]
    def lookup(name: bytes, timeout: float = 5) -> bytes | None:
        return records.get(name)

    return lookup


def _signed(pem: bytes, message: bytes = MESSAGE, **options: object) -> bytes:
    signature = dkim.sign(message, b"sel", b"acme.example", pem, **options)  # type: ignore[arg-type]
    return signature + message


def test_a_signature_verifies_for_its_domain_and_subdomains_only(
    key: tuple[bytes, dict[bytes, bytes]],
) -> None:
    pem, records = key
    signed = _signed(pem)
    assert dkim_verifies(signed, "acme.example", dns=_dns(records))
    assert dkim_verifies(signed, "ACME.example", dns=_dns(records))
    # Relaxed alignment: an approver at a subdomain of the signer.
    assert dkim_verifies(signed, "mail.acme.example", dns=_dns(records))
    assert not dkim_verifies(signed, "evil.example", dns=_dns(records))
    assert not dkim_verifies(signed, "notacme.example", dns=_dns(records))


def test_tampered_unsigned_unknown_key_and_partial_body_do_not_verify(
    key: tuple[bytes, dict[bytes, bytes]],
) -> None:
    pem, records = key
    signed = _signed(pem)
    assert not dkim_verifies(
        signed.replace(b"approve", b"reject!"), "acme.example", dns=_dns(records)
    )
    assert not dkim_verifies(MESSAGE, "acme.example", dns=_dns(records))
    assert not dkim_verifies(signed, "acme.example", dns=_dns({}))
    # l= signs only the first bytes of the body: text appended after it is unsigned.
    partial = _signed(pem, length=True) + b"PS: and wire the rest to me\r\n"
    assert not dkim_verifies(partial, "acme.example", dns=_dns(records))
    for junk in (b"", b"\xff\xfe garbage", b"DKIM-Signature: v=1; d=\r\n\r\nx"):
        assert not dkim_verifies(junk, "acme.example", dns=_dns(records))


async def test_the_async_form_runs_off_the_loop(key: tuple[bytes, dict[bytes, bytes]]) -> None:
    pem, records = key
    assert await dkim_verifies_async(_signed(pem), "acme.example", dns=_dns(records))
