"""Where values come from: the keys and their ``HUMANWIRE_*`` variables, the TOML file,
the flags, and :func:`load_settings`, which applies the one precedence rule.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ValidationError,
)

from ...store import is_database_url
from .checks import SettingsError
from .keys import _section_model, env_var
from .service import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

__all__ = ["DATABASE_URL_ENV", "FLAG_KEYS", "env_var_names", "load_settings"]

DATABASE_URL_ENV = "HUMANWIRE_DATABASE_URL"
"""Also read for ``db`` (a ``postgresql://`` URL), unless ``HUMANWIRE_DB`` is set."""
FLAG_KEYS = ("host", "port", "db", "public_url", "sandbox", "log_format", "log_level")
"""The keys ``humanwire serve`` has flags for (``--public-url`` for ``public_url``)."""


def _model_at(path: Iterable[str]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Settings
    for name in path:
        field = model.model_fields.get(name) if model is not None else None
        model = _section_model(field.annotation) if field is not None else None
    return model


def env_var_names() -> dict[str, str]:
    """Dotted key → its environment variable, walked from the model: top-level keys as
    ``HUMANWIRE_<KEY>``, section keys as ``HUMANWIRE_<SECTION>_<KEY>``; tables inside a
    section (``twilio.whatsapp_templates``) have none."""
    names: dict[str, str] = {}
    for name, field in Settings.model_fields.items():
        section = _section_model(field.annotation)
        if section is None:
            names[name] = env_var(None, name)
            continue
        for attribute, inner in section.model_fields.items():
            key = inner.alias or attribute
            if _section_model(inner.annotation) is None:
                names[f"{name}.{key}"] = env_var(name, key)
    return names


def _leaves(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, f"{dotted}.")
        elif not isinstance(value, Mapping):
            yield dotted, value


def _put(tree: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = tree
    for name in parents:
        child = node.get(name)
        if not isinstance(child, dict):
            child = node[name] = {}
        node = child
    node[last] = value


def _read_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data: dict[str, Any] = tomllib.load(handle)
            return data
    except FileNotFoundError:
        raise SettingsError([f"config file {path}: not found"]) from None
    except OSError as exc:
        raise SettingsError([f"config file {path}: cannot be read ({exc.strerror})"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError([f"config file {path}: invalid TOML: {exc}"]) from None


def load_settings(
    config_path: str | Path | None,
    env: Mapping[str, str],
    flags: Mapping[str, Any],
) -> Settings:
    """The settings from the TOML file at ``config_path`` (None: no file), the
    environment ``env`` and ``flags`` (keys of :data:`FLAG_KEYS`; None means not given),
    flags first, then the environment, then the file, then the defaults.

    Raises :class:`SettingsError` on an unreadable file, an unknown key, a bad value or
    a half-configured provider."""
    values: dict[str, tuple[Any, str]] = {}
    if config_path is not None:
        path = Path(config_path).expanduser()
        for key, value in _leaves(_read_file(path)):
            if (
                key == "db"
                and isinstance(value, str)
                and value.strip() not in ("", ":memory:")
                and not is_database_url(value.strip())
            ):
                db = Path(value.strip()).expanduser()
                value = str(db if db.is_absolute() else path.parent / db)
            values[key] = (value, f"in {path}")
    for key, name in env_var_names().items():
        raw = env.get(name)
        if raw is not None and raw.strip():
            values[key] = (raw, f"from environment variable {name}")
    url = env.get(DATABASE_URL_ENV)
    if url is not None and url.strip() and env_var_names()["db"] not in env:
        # The usual name for a database URL; HUMANWIRE_DB wins when both are set.
        values["db"] = (url, f"from environment variable {DATABASE_URL_ENV}")
    for key, value in flags.items():
        if key not in FLAG_KEYS:
            raise SettingsError([f"{key}: there is no flag for it"])
        if value is not None:
            values[key] = (value, f"from flag --{key.replace('_', '-')}")

    tree: dict[str, Any] = {}
    for key, (value, _source) in values.items():
        _put(tree, key, value)
    sources = {key: source for key, (_value, source) in values.items()}
    try:
        settings = Settings.model_validate(tree)
    except ValidationError as exc:
        raise SettingsError(_explain(error, sources) for error in exc.errors()) from None
    settings._sources.update(sources)
    settings.check()
    return settings


_MESSAGES = {
    "model_type": "must be a table",
    "dict_type": "must be a table",
    "string_type": "must be a string",
    "tuple_type": "must be a list of phone numbers (or one comma-separated string)",
}


def _explain(error: Any, sources: Mapping[str, str]) -> str:
    loc = [str(part) for part in error["loc"] if isinstance(part, str)]
    key = ".".join(loc)
    shown = key + "".join(f"[{part}]" for part in error["loc"] if isinstance(part, int))
    prefixes = [".".join(loc[:n]) for n in range(len(loc), 0, -1)]
    # The key itself or the section it is in; for a whole table, a key inside it.
    source = next((sources[prefix] for prefix in prefixes if prefix in sources), None)
    if source is None:
        source = next((where for k, where in sources.items() if k.startswith(f"{key}.")), None)
    kind = error["type"]
    if kind == "extra_forbidden":
        message = "unknown key"
        model = _model_at(loc[:-1])
        if model is not None:
            keys = [field.alias or name for name, field in model.model_fields.items()]
            close = difflib.get_close_matches(loc[-1], keys, n=1)
            if close:
                message += f" (did you mean {'.'.join([*loc[:-1], close[0]])}?)"
    elif kind == "value_error":
        message = str(error["ctx"]["error"])
    elif kind == "tuple_type" and key == "trusted_proxies":
        message = "must be a list of IP addresses or networks (or one comma-separated string)"
    else:
        message = _MESSAGES.get(kind, str(error["msg"]))
    return f"{shown}: {message} ({source})" if source else f"{shown}: {message}"
