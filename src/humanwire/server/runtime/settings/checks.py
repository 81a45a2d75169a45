"""The checks every section's values go through (messages never repeat the value: it
may be a secret), the strict model all sections build on, and :class:`SettingsError`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
)
from pydantic_core import PydanticCustomError

from humanwire.types.rules import check_e164

from ...config import (
    TELEPHONY_PROVIDERS,
)

__all__ = [
    "E164",
    "AccountSid",
    "BotToken",
    "ClientId",
    "ContentSid",
    "HttpURL",
    "OnOff",
    "Port",
    "Proxy",
    "Secret",
    "SettingsError",
    "Switch",
    "Text",
]


class SettingsError(ValueError):
    """The settings cannot start a service; ``problems`` has one sentence per problem,
    each naming the key and, when it was given, where it came from."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


# -- value checks (messages never repeat the value: it may be a secret) ----------------------
def _text(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


def _token(value: str) -> str:
    value = _text(value)
    if any(char.isspace() for char in value):
        raise ValueError("must not contain spaces")
    return value


def _secret(value: SecretStr) -> SecretStr:
    return SecretStr(_token(value.get_secret_value()))


def _matching(pattern: str, expected: str) -> Callable[[str], str]:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        value = value.strip()
        if not compiled.fullmatch(value):
            raise ValueError(f"must be {expected}")
        return value

    return check


def _http_url(value: str) -> str:
    value = value.strip()
    expected = "an http(s) URL such as https://humanwire.example.com"
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        raise ValueError(f"must be {expected}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ValueError(f"must be {expected}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user name or password")
    if parts.query or parts.fragment:
        raise ValueError("must not have a query or fragment")
    return value.rstrip("/")


def _e164(value: str) -> str:
    value = value.strip()
    try:
        return check_e164(value)
    except (PydanticCustomError, ValueError):
        raise ValueError("must be a phone number in E.164 form, such as +14155550100") from None


def _whatsapp_sender(value: str) -> str:
    value = value.strip()
    if value.startswith("whatsapp:"):
        value = value[len("whatsapp:") :]
    return _e164(value)


_TRUE = frozenset({"true", "on", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "0"})


def _switch(expected: str) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
        raise ValueError(f"must be {expected}")

    setattr(parse, "words", expected.split(" or "))  # noqa: B010 - for the reference
    return parse


def _ed25519_key(value: str) -> str:
    import base64
    import binascii

    value = value.strip()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ValueError("must be the account's Ed25519 public key, base64 (32 bytes)")
    return value


def _signing_key(value: SecretStr) -> SecretStr:
    from ...approvals.checkpoints import parse_key

    parse_key(value.get_secret_value())  # its message never repeats the value
    return SecretStr(value.get_secret_value().strip())


def _carriers(value: Any) -> Any:
    value = _comma_separated(value)
    if not isinstance(value, (list, tuple)):
        return value
    names = [str(name).strip().lower() for name in value]
    unknown = [name for name in names if name not in TELEPHONY_PROVIDERS]
    if unknown or len(set(names)) != len(names) or not names:
        raise ValueError(
            f"must list {' and '.join(TELEPHONY_PROVIDERS)}, each once, the first carrying "
            "the shared sends"
        )
    return tuple(names)


def _one_of(*choices: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        value = value.strip().lower()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return check


def _bot_token(value: SecretStr) -> SecretStr:
    if not value.get_secret_value().startswith("xoxb-"):
        raise ValueError("must be a Slack bot token (xoxb-…)")
    return value


def _port(value: Any) -> Any:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ValueError("must be a port number from 0 to 65535")
    return value


def _comma_separated(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _proxy(value: str) -> str:
    """An address or a network (``10.0.0.0/8``; host bits set are dropped), as uvicorn's
    ``forwarded_allow_ips`` takes it: uvicorn itself would take a typo for a name that
    never matches."""
    value = value.strip()
    try:
        if "/" in value:
            return str(ipaddress.ip_network(value, strict=False))
        return str(ipaddress.ip_address(value))
    except ValueError:
        expected = "an IP address or network, such as 127.0.0.1 or 10.0.0.0/8"
        raise ValueError(f"must be {expected}") from None


def _number(value: float) -> str:
    """``1000000``, ``2.5``: as an operator writes it (never ``1e+06``)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class _Number:
    """A whole number or a number of seconds within bounds, from TOML or from the text of
    a variable; ``kind`` says which (the reference table shows it). The message says the
    bounds, never the value."""

    def __init__(self, *, whole: bool, low: float, high: float) -> None:
        self.whole, self.low, self.high = whole, low, high
        lo, hi = _number(low), _number(high)
        if whole:
            self.kind = f"whole number, {lo} to {hi}"
        elif low == 0:
            self.kind = f"seconds, over 0 up to {hi}"
        else:
            self.kind = f"seconds, {lo} to {hi}"

    def _expected(self) -> str:
        lo, hi = _number(self.low), _number(self.high)
        if self.whole:
            return f"must be a whole number from {lo} to {hi}"
        if self.low == 0:
            return f"must be a number of seconds over 0 and at most {hi}"
        return f"must be a number of seconds from {lo} to {hi}"

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            try:
                value = int(text) if self.whole else float(text)
            except ValueError:
                raise ValueError(self._expected()) from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(self._expected())
        if self.whole and not isinstance(value, int):
            raise ValueError(self._expected())
        # Zero seconds is never a sensible window or timeout; NaN fails every comparison.
        if self.whole or self.low:
            in_range = self.low <= value <= self.high
        else:
            in_range = 0 < value <= self.high
        if not in_range:
            raise ValueError(self._expected())
        return value if self.whole else float(value)


def _count(low: int, high: int) -> BeforeValidator:
    """``Annotated[int, _count(1, 100)]``: a whole number from 1 to 100."""
    return BeforeValidator(_Number(whole=True, low=low, high=high))


def _seconds(high: float, low: float = 0) -> BeforeValidator:
    """``Annotated[float, _seconds(60)]``: seconds over 0 (or from ``low``) up to ``high``."""
    return BeforeValidator(_Number(whole=False, low=low, high=high))


def _sender(value: str) -> str:
    from ...delivery.email.compose import parse_sender

    parse_sender(value.strip())
    return value.strip()


def _domain(value: str) -> str:
    value = value.strip().lower().rstrip(".")
    label = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
    if not re.fullmatch(rf"{label}(\.{label})+", value):
        raise ValueError("must be a domain name, such as replies.example.com")
    return value


Text = Annotated[str, AfterValidator(_token)]
Proxy = Annotated[str, AfterValidator(_proxy)]
HttpURL = Annotated[str, AfterValidator(_http_url)]
E164 = Annotated[str, AfterValidator(_e164)]
Secret = Annotated[SecretStr, AfterValidator(_secret)]
Switch = Annotated[bool, BeforeValidator(_switch("true or false"))]
OnOff = Annotated[bool, BeforeValidator(_switch("on or off"))]
Port = Annotated[int, BeforeValidator(_port)]
AccountSid = Annotated[
    str, AfterValidator(_matching(r"AC[0-9a-fA-F]{32}", "AC followed by 32 hex digits"))
]
ContentSid = Annotated[
    str,
    AfterValidator(
        _matching(r"HX[0-9a-fA-F]{32}", "a Content template SID: HX followed by 32 hex digits")
    ),
]
BotToken = Annotated[SecretStr, AfterValidator(_secret), AfterValidator(_bot_token)]
ClientId = Annotated[
    str, AfterValidator(_matching(r"\d+\.\d+", "a Slack client ID such as 1234567890.123456"))
]


# -- the model of the file ----------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


def _about(text: str) -> Any:
    """The field's meaning: shown in the configuration reference (docs/operating)."""
    return Field(description=text)
