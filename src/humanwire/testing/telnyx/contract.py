"""The contract the Telnyx fake checks requests against: the ``telnyx`` package's published
request types.

The package is generated (Stainless) from Telnyx's OpenAPI description; each operation's
parameters are a ``TypedDict`` whose keys carry their wire names
(``Annotated[str, PropertyInfo(alias="From")]``) and whose ``Required[...]`` keys are the
description's required ones. ``check`` walks such a type against what arrived on the wire:
an unknown name, a missing required one or a value of the wrong type (``Literal`` enums,
nested objects, arrays) is a ``ContractViolation`` naming the JSON pointer of the culprit.
Query strings arrive as text in deepObject form (``filter[phone_number]=…``): ``query``
turns them into the nested shape first, and text is taken for the scalar it spells.
"""

from __future__ import annotations

import datetime
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any, Union, get_args, get_origin

from typing_extensions import NotRequired, Required, is_typeddict

__all__ = ["ContractViolation", "check", "query", "wire_fields"]


class ContractViolation(Exception):
    def __init__(self, message: str, pointer: str) -> None:
        super().__init__(f"{pointer or '/'}: {message}")
        self.message = message
        self.pointer = pointer


@cache
def wire_fields(typed_dict: type) -> tuple[dict[str, tuple[str, Any]], frozenset[str]]:
    """wire name → (python name, type), and the required wire names."""
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    required_python = set(getattr(typed_dict, "__required_keys__", ()))
    fields: dict[str, tuple[str, Any]] = {}
    required: set[str] = set()
    for name, hint in hints.items():
        wire, is_required, inner = name, name in required_python, hint
        while True:
            origin = get_origin(inner)
            if origin in (Required, NotRequired):
                is_required = origin is Required or is_required
                inner = get_args(inner)[0]
            elif origin is typing.Annotated:
                for meta in inner.__metadata__:
                    alias = getattr(meta, "alias", None)
                    if isinstance(alias, str):
                        wire = alias
                inner = get_args(inner)[0]
            else:
                break
        fields[wire] = (name, inner)
        if is_required:
            required.add(wire)
    return fields, frozenset(required)


def check(tp: Any, value: Any, pointer: str = "", *, text: bool = False) -> None:
    """Raises ``ContractViolation`` unless ``value`` is a ``tp``; ``text``: scalars may
    arrive as strings (a query)."""
    origin = get_origin(tp)
    if origin in (Required, NotRequired, typing.Annotated):
        return check(get_args(tp)[0], value, pointer, text=text)
    if tp is Any or tp is object:
        return None
    if origin in (Union, types.UnionType):
        problems: list[ContractViolation] = []
        for option in get_args(tp):
            try:
                check(option, value, pointer, text=text)
                return None
            except ContractViolation as exc:
                problems.append(exc)
        deepest = max(problems, key=lambda p: len(p.pointer))
        raise deepest
    if tp is type(None):
        if value is None:
            return None
        raise ContractViolation("must be null", pointer)
    if origin is typing.Literal:
        allowed = get_args(tp)
        if value in allowed or (text and value in [str(a) for a in allowed]):
            return None
        raise ContractViolation(f"must be one of {', '.join(map(str, allowed))}", pointer)
    if is_typeddict(tp):
        if not isinstance(value, Mapping):
            raise ContractViolation("must be an object", pointer)
        fields, required = wire_fields(tp)
        for key in value:
            if key not in fields:
                raise ContractViolation(f"unknown parameter {key!r}", f"{pointer}/{key}")
        for key in required:
            if key not in value:
                raise ContractViolation("is required", f"{pointer}/{key}")
        for key, item in value.items():
            check(fields[key][1], item, f"{pointer}/{key}", text=text)
        return None
    if tp is bool:
        if isinstance(value, bool) or (text and value in ("true", "false")):
            return None
        raise ContractViolation("must be a boolean", pointer)
    if tp is int:
        if (isinstance(value, int) and not isinstance(value, bool)) or (
            text and isinstance(value, str) and value.lstrip("-").isdigit()
        ):
            return None
        raise ContractViolation("must be an integer", pointer)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return None
        raise ContractViolation("must be a number", pointer)
    if tp is str or tp in (datetime.datetime, datetime.date):
        if isinstance(value, str):
            return None
        raise ContractViolation("must be a string", pointer)
    container = origin or tp
    if container in (list, Sequence, Iterable) or getattr(container, "__name__", "") in (
        "SequenceNotStr",
        "List",
    ):
        if text and isinstance(value, str):
            value = value.split(",")  # the package's query arrays: array_format="comma"
        if not isinstance(value, list):
            raise ContractViolation("must be an array", pointer)
        [item_type] = get_args(tp) or (Any,)
        for index, item in enumerate(value):
            check(item_type, item, f"{pointer}/{index}", text=text)
        return None
    if container in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ContractViolation("must be an object", pointer)
        return None
    return None  # a type the fake does not model: accepted


def query(params: Iterable[tuple[str, str]], typed_dict: type) -> dict[str, Any]:
    """A query string in deepObject form as the nested value ``check`` takes: a
        top-level wire name is taken whole (``page[size]``), any other ``a[b][c]`` nests;
        ``a[]`` or a repeated name is an array (as is a comma-separated value where the type
    wants one: the package sends arrays that way)."""
    top, _required = wire_fields(typed_dict)
    result: dict[str, Any] = {}
    for key, value in params:
        array = key.endswith("[]")
        name = key[:-2] if array else key
        if name in top:
            path = [name]
        else:
            head, _, rest = name.partition("[")
            path = [head, *rest.rstrip("]").split("][")] if rest else [head]
        node = result
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ContractViolation("is both a value and an object", "/" + "/".join(path))
            node = child
        last = path[-1]
        if array or last in node:
            existing = node.get(last)
            items = existing if isinstance(existing, list) else []
            if existing is not None and not isinstance(existing, list):
                items = [existing]
            node[last] = [*items, value]
        else:
            node[last] = value
    return result
