"""How a key is named: in the file (``[section] key``) and in the environment
(``HUMANWIRE_<SECTION>_<KEY>``), and a section's model found from its field.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, get_args, get_origin

from pydantic import (
    BaseModel,
)

__all__ = ["ENV_PREFIX", "env_var"]

ENV_PREFIX = "HUMANWIRE_"


# -- keys, variables, sources ------------------------------------------------------------
def _section_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is not None:
        for arg in get_args(annotation):
            found = _section_model(arg)
            if found is not None:
                return found
    return None


def _attribute(model: type[BaseModel], key: str) -> str:
    """The attribute of a key (``from`` → ``from_``: keys that are Python keywords have
    an alias)."""
    for name, field in model.model_fields.items():
        if (field.alias or name) == key:
            return name
    return key


def _keys(section: str, keys: Iterable[str]) -> str:
    return " and ".join(f"{section}.{key}" for key in keys)


def env_var(section: str | None, key: str) -> str:
    """A key's environment variable: ``HUMANWIRE_<SECTION>_<KEY>``, a top-level key's
    ``HUMANWIRE_<KEY>``."""
    return (
        f"{ENV_PREFIX}{section.upper()}_{key.upper()}" if section else f"{ENV_PREFIX}{key.upper()}"
    )


def _how(section: str | None, key: str) -> str:
    where = f"[{section}] {key}" if section else key
    return f"in the file ({where}) or as {env_var(section, key)}"
