"""``[teams]``: the Microsoft Teams bot (docs/going-live/teams.md)."""

from __future__ import annotations

import re
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
        _about("The bot's Microsoft App ID; with `app_password`, turns Teams on."),
    ] = None
    app_password: Annotated[
        SecretStr | None,
        _about(
            "A client secret of the bot's app registration (Certificates & secrets): the "
            "service asks Microsoft for the bot's tokens with it."
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
        missing = [key for key in ("app_id", "app_password") if getattr(self, key) is None]
        if not missing:
            return []
        return [f"teams is half-configured: missing {', '.join(f'teams.{k}' for k in missing)}"]

    def config(self) -> TeamsConfig | None:
        if self.app_id is None or self.app_password is None:
            return None
        return TeamsConfig(
            app_id=self.app_id,
            app_password=self.app_password.get_secret_value(),
            tenant_id=self.tenant_id,
            token_url=self.token_url,
            jwks_url=self.jwks_url,
        )
