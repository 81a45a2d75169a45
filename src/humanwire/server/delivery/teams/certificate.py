"""The bot's certificate credential (docs/going-live/teams.md): in place of a client
secret, the bot proves itself to Microsoft Entra ID's token endpoint with a **client
assertion**, a short-lived JWT signed with the private key of a certificate uploaded to
the app registration (OpenID Connect's ``private_key_jwt``; the Microsoft identity
platform's "certificate credentials"):

- header: ``alg`` ``PS256`` (RSA-PSS), ``typ`` ``JWT``, ``x5t#S256`` the base64url SHA-256
  thumbprint of the certificate's DER encoding, and ``x5t`` its SHA-1 thumbprint (the
  header Entra read before ``x5t#S256``);
- claims: ``aud`` the token endpoint's URL, ``iss`` = ``sub`` = the app (client) id, a
  fresh ``jti``, ``nbf`` / ``iat`` now, ``exp`` ten minutes on.

It goes in the client-credentials request as ``client_assertion`` with
``client_assertion_type`` ``urn:ietf:params:oauth:client-assertion-type:jwt-bearer``.
Needs PyJWT and cryptography (``humanwire[teams]``)."""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = [
    "ASSERTION_TYPE",
    "LIFETIME",
    "CertificateCredential",
    "CertificateProblem",
    "thumbprints",
]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
LIFETIME = 600
"""Seconds an assertion is valid (Microsoft advises 5 to 10 minutes after ``nbf``)."""
ALGORITHM = "PS256"


class CertificateProblem(ValueError):
    """A certificate or private key the bot cannot use: the message names what is wrong."""


def _b64url(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def thumbprints(certificate: x509.Certificate) -> tuple[str, str]:
    """``(x5t, x5t#S256)``: the base64url SHA-1 and SHA-256 of the certificate's DER."""
    der = certificate.public_bytes(serialization.Encoding.DER)
    return _b64url(hashlib.sha1(der, usedforsecurity=False).digest()), _b64url(
        hashlib.sha256(der).digest()
    )


def _not_after(certificate: x509.Certificate) -> datetime:
    return certificate.not_valid_after_utc


@dataclass(frozen=True)
class CertificateCredential:
    key: rsa.RSAPrivateKey = field(repr=False)
    x5t: str
    x5t_s256: str
    not_after: datetime

    @classmethod
    def load(cls, certificate_pem: str, private_key_pem: str) -> CertificateCredential:
        """The certificate (PEM) and its RSA private key (PEM, unencrypted);
        ``CertificateProblem`` when either cannot be read, the key is not the
        certificate's, or the certificate has expired."""
        try:
            certificate = x509.load_pem_x509_certificate(certificate_pem.encode())
        except ValueError as exc:
            raise CertificateProblem(f"not a PEM X.509 certificate ({exc})") from None
        try:
            key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
        except (ValueError, TypeError) as exc:
            raise CertificateProblem(
                f"the private key is not an unencrypted PEM private key ({exc})"
            ) from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise CertificateProblem("the private key must be an RSA key (Entra signs RS/PS256)")
        public = certificate.public_key()
        if not isinstance(public, rsa.RSAPublicKey) or (
            public.public_numbers() != key.public_key().public_numbers()
        ):
            raise CertificateProblem("the private key is not the certificate's")
        not_after = _not_after(certificate)
        if not_after <= datetime.now(timezone.utc):
            raise CertificateProblem(f"the certificate expired on {not_after:%Y-%m-%d}")
        x5t, x5t_s256 = thumbprints(certificate)
        return cls(key=key, x5t=x5t, x5t_s256=x5t_s256, not_after=not_after)

    def assertion(self, client_id: str, audience: str, now: float | None = None) -> str:
        """A client assertion for ``client_id`` at the token endpoint ``audience``."""
        issued = int(time.time() if now is None else now)
        claims = {
            "aud": audience,
            "iss": client_id,
            "sub": client_id,
            "jti": str(uuid.uuid4()),
            "nbf": issued,
            "iat": issued,
            "exp": issued + LIFETIME,
        }
        headers = {"typ": "JWT", "x5t": self.x5t, "x5t#S256": self.x5t_s256}
        return jwt.encode(claims, self.key, algorithm=ALGORITHM, headers=headers)
