"""The app registration's certificates, as Microsoft Entra ID keeps them, and the check its
token endpoint makes of a client assertion (the Microsoft identity platform's
"certificate credentials"): the header's ``alg`` RS256 or PS256 and its ``x5t#S256`` (or
``x5t``) naming a certificate uploaded to the registration, the signature against that
certificate's public key, ``aud`` the token endpoint's URL, ``iss`` = ``sub`` = the app
id, a ``jti`` not seen before, ``nbf`` not in the future and ``exp`` not past (the
fake's clock, which ``clock_skew`` moves to play a service whose clock is off)."""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from humanwire.server.delivery.teams.certificate import ASSERTION_TYPE, thumbprints

__all__ = [
    "ASSERTION_TYPE",
    "AssertionRefused",
    "Certificates",
    "make_certificate",
]

SKEW = 300
"""Seconds of clock difference the token endpoint tolerates on ``nbf``."""
ALGORITHMS = ("RS256", "PS256")


def make_certificate(
    name: str = "humanwire-bot", *, days: float = 365, key: rsa.RSAPrivateKey | None = None
) -> tuple[str, str]:
    """A self-signed certificate valid for ``days`` (negative: expired) and its RSA key,
    as PEM text ``(certificate, private_key)``."""
    key = key or rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.timezone.utc)
    start = min(now, now + dt.timedelta(days=days)) - dt.timedelta(days=1)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(now + dt.timedelta(days=days))
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return pem, private


class AssertionRefused(Exception):
    """What the token endpoint answers a bad assertion (``invalid_client``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Certificates:
    """The certificates uploaded to the app registration, by thumbprint."""

    app_id: str
    clock_skew: float = 0.0
    """Seconds the token endpoint's clock is ahead of the real one."""
    _by_x5t: dict[str, Any] = field(default_factory=dict)
    _by_s256: dict[str, Any] = field(default_factory=dict)
    _jtis: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def upload(self, certificate_pem: str) -> None:
        """A certificate (PEM) added to the registration, as in Certificates & secrets."""
        certificate = x509.load_pem_x509_certificate(certificate_pem.encode())
        x5t, s256 = thumbprints(certificate)
        with self._lock:
            self._by_x5t[x5t] = certificate.public_key()
            self._by_s256[s256] = certificate.public_key()

    def __len__(self) -> int:
        return len(self._by_s256)

    def check(self, assertion: str, client_id: str, audience: str) -> None:
        """``AssertionRefused`` unless ``assertion`` is a valid client assertion of the app
        for the token endpoint at ``audience``."""
        try:
            header = jwt.get_unverified_header(assertion)
        except jwt.PyJWTError:
            raise AssertionRefused("the client assertion is not a JWT") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise AssertionRefused(
                f"the client assertion's alg must be RS256 or PS256, not {algorithm}"
            )
        with self._lock:
            if "x5t#S256" in header:
                public = self._by_s256.get(str(header["x5t#S256"]))
            else:
                public = self._by_x5t.get(str(header.get("x5t", "")))
        if public is None:
            raise AssertionRefused(
                "AADSTS700027: Client assertion failed signature validation. "
                "[Reason - The key was not found.]"
            )
        try:
            claims = jwt.decode(
                assertion,
                public,
                algorithms=[algorithm],
                audience=audience,
                options={
                    "require": ["aud", "iss", "sub", "jti", "nbf", "exp"],
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.InvalidSignatureError:
            raise AssertionRefused(
                "AADSTS700027: Client assertion failed signature validation."
            ) from None
        except jwt.InvalidAudienceError:
            raise AssertionRefused(f"the client assertion's aud is not {audience}") from None
        except jwt.PyJWTError as exc:
            raise AssertionRefused(f"invalid client assertion ({exc})") from None
        if claims["iss"] != self.app_id or claims["sub"] != self.app_id:
            raise AssertionRefused("the client assertion's iss and sub must be the app id")
        if client_id and client_id != self.app_id:
            raise AssertionRefused("client_id is not the client assertion's application")
        now = time.time() + self.clock_skew
        if not isinstance(claims["exp"], int | float) or claims["exp"] <= now:
            raise AssertionRefused(
                "AADSTS700024: Client assertion is not within its valid time range (expired)."
            )
        if not isinstance(claims["nbf"], int | float) or claims["nbf"] > now + SKEW:
            raise AssertionRefused(
                "AADSTS700024: Client assertion is not within its valid time range (nbf)."
            )
        jti = str(claims["jti"])
        with self._lock:
            if jti in self._jtis:
                raise AssertionRefused("the client assertion (its jti) was used before")
            self._jtis.add(jti)
