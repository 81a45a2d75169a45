"""``[teams]``: the Microsoft Teams bot (docs/going-live/teams.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, SecretStr

from ...config import TeamsConfig
from .checks import HttpURL, _about, _Strict

__all__ = ["TeamsSettings"]

_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _guid(what: str) -> object:
    def check(value: str | None) -> str | None:
        if value is not None and not _GUID.fullmatch(value):
            raise ValueError(f"must be the {what}: a GUID such as 8f0e…-…")
        return value.lower() if value is not None else None

    return AfterValidator(check)


class TeamsSettings(_Strict):
    app_id: Annotated[
        str | None,
        _guid("Microsoft App ID (the Azure Bot's Configuration page)"),
        _about("The bot's Microsoft App ID; with `app_password` or `certificate`, turns Teams on."),
    ] = None
    app_password: Annotated[
        SecretStr | None,
        _about(
            "A client secret of the bot's app registration (Certificates & secrets): the "
            "service asks Microsoft for the bot's tokens with it. Or a `certificate`."
        ),
    ] = None
    certificate: Annotated[
        str | None,
        _about(
            "In place of `app_password`: the certificate uploaded to the app registration "
            "(Certificates & secrets), a PEM file's path or the PEM itself. The service signs "
            "each token request with its private key (a client assertion, PS256)."
        ),
    ] = None
    private_key: Annotated[
        SecretStr | None,
        _about(
            "The certificate's RSA private key, unencrypted: a PEM file's path or the PEM "
            "itself; by default the `certificate` file, when it holds the key too."
        ),
    ] = None
    tenant_id: Annotated[
        str | None,
        _guid("directory (tenant) id"),
        _about(
            "A single-tenant bot's tenant: its tokens come from that tenant, and activities "
            "of other tenants are refused (403). Leave it out for a multi-tenant bot."
        ),
    ] = None
    token_url: Annotated[
        HttpURL | None,
        _about(
            "The token endpoint; by default Microsoft's for `tenant_id` (or "
            "`botframework.com`). Tests point it at the fake."
        ),
    ] = None
    jwks_url: Annotated[
        HttpURL,
        _about(
            "The Bot Framework's key set, which signs every activity's bearer token; tests "
            "point it at the fake's."
        ),
    ] = TeamsConfig.jwks_url

    @property
    def given(self) -> bool:
        return bool(self.model_fields_set)

    def problems(self) -> list[str]:
        if not self.given:
            return []
        missing = ["app_id"] if self.app_id is None else []
        if self.app_password is not None and self.certificate is not None:
            return ["teams.app_password and teams.certificate both given: the bot uses one"]
        if self.app_password is None and self.certificate is None:
            missing.append("app_password (or teams.certificate)")
        if missing:
            return [f"teams is half-configured: missing {', '.join(f'teams.{k}' for k in missing)}"]
        if self.private_key is not None and self.certificate is None:
            return ["teams.private_key given without teams.certificate"]
        if self.certificate is not None:
            try:
                self._certificate_pems()
            except ValueError as exc:
                return [str(exc)]
        return []

    def _certificate_pems(self) -> tuple[str, str]:
        """The certificate and its key as PEM text, checked (``ValueError`` naming the key
        and what is wrong)."""
        assert self.certificate is not None
        certificate = _pem_or_file(self.certificate, "teams.certificate")
        given = self.private_key.get_secret_value() if self.private_key is not None else None
        key = certificate if given is None else _pem_or_file(given, "teams.private_key")
        if "PRIVATE KEY-----" not in key:
            raise ValueError(
                "teams.private_key missing: the teams.certificate file holds no private key"
                if given is None
                else "teams.private_key holds no PEM private key"
            )
        try:
            from ...delivery.teams.certificate import CertificateCredential, CertificateProblem
        except ImportError:
            raise ValueError(
                'teams.certificate needs PyJWT and cryptography: pip install "humanwire[teams]"'
            ) from None
        try:
            CertificateCredential.load(certificate, key)
        except CertificateProblem as exc:
            raise ValueError(f"teams.certificate: {exc}") from None
        return certificate, key

    def config(self) -> TeamsConfig | None:
        if self.app_id is None or (self.app_password is None and self.certificate is None):
            return None
        certificate = key = None
        if self.certificate is not None:
            try:
                certificate, key = self._certificate_pems()
            except ValueError:
                return None
        return TeamsConfig(
            app_id=self.app_id,
            app_password=(
                self.app_password.get_secret_value() if self.app_password is not None else None
            ),
            certificate=certificate,
            private_key=key,
            tenant_id=self.tenant_id,
            token_url=self.token_url,
            jwks_url=self.jwks_url,
        )


def _pem_or_file(value: str, key: str) -> str:
    """``value`` itself when it is PEM text, else the text of the file it names."""
    if value.lstrip().startswith("-----BEGIN"):
        return value
    try:
        return Path(value).expanduser().read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{key}: cannot read {value!r} ({exc.__class__.__name__})") from None
