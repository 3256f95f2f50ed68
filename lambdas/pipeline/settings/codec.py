"""One way to write a policy dataclass as JSON and read it back, driven by its fields' type hints.

Supported: nested frozen dataclasses, enums (by value), `tuple[X, ...]` and fixed tuples (as JSON
arrays), `dict[str, X]` (as JSON objects), `X | None`, str, int, float and bool. Every field is
written, so reading is strict: an unknown or missing key, or a value of the wrong type, fails with
the path of the field that is wrong. A dataclass's own `__post_init__` checks run on reading too,
so the function refuses what the stack would have refused. Only fields are written: a
`cached_property` derived from them (JobsSettings.grants) is made again on reading.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import fields, is_dataclass
from enum import Enum
from functools import cache
from typing import Any, TypeVar, Union

T = TypeVar("T")


class PolicyError(ValueError):
    """A policy's JSON does not match its type; the message names the field."""


def to_plain(value: Any) -> Any:
    """A policy value as JSON-ready data (dicts, lists, str, numbers, None)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    return value


def dumps(value: Any) -> str:
    return json.dumps(to_plain(value), separators=(",", ":"))


def loads(cls: type[T], text: str) -> T:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PolicyError(f"{cls.__name__}: not valid JSON: {exc}") from exc
    return from_plain(cls, raw)


def from_plain(cls: type[T], raw: Any) -> T:
    """`raw` (as `to_plain` wrote it) read back into `cls`, checked field by field."""
    return typing.cast(T, _read(cls, raw, cls.__name__))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _read(kind: Any, raw: Any, path: str) -> Any:
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        options = typing.get_args(kind)
        if raw is None and type(None) in options:
            return None
        rest = [option for option in options if option is not type(None)]
        if len(rest) != 1:
            raise PolicyError(f"{path}: only `X | None` unions can be read")
        return _read(rest[0], raw, path)
    if origin is tuple:
        return _tuple(kind, raw, path)
    if origin is dict:
        return _dict(kind, raw, path)
    if isinstance(kind, type) and is_dataclass(kind):
        return _dataclass(kind, raw, path)
    if isinstance(kind, type) and issubclass(kind, Enum):
        try:
            return kind(raw)
        except ValueError:
            valid = ", ".join(repr(member.value) for member in kind)
            raise PolicyError(f"{path}: {raw!r} is not one of {valid}") from None
    return _scalar(kind, raw, path)


def _dataclass(kind: type, raw: Any, path: str) -> Any:
    if not isinstance(raw, dict):
        raise PolicyError(f"{path}: expected an object, got {type(raw).__name__}")
    declared = fields(kind)
    names = {f.name for f in declared}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise PolicyError(f"{path}: unknown field(s) {', '.join(unknown)}")
    missing = [f.name for f in declared if f.name not in raw]
    if missing:
        raise PolicyError(f"{path}: missing field(s) {', '.join(missing)}")
    hints = _hints(kind)
    values = {f.name: _read(hints[f.name], raw[f.name], f"{path}.{f.name}") for f in declared}
    try:
        return kind(**values)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"{path}: {exc}") from exc


def _tuple(kind: Any, raw: Any, path: str) -> tuple[Any, ...]:
    if not isinstance(raw, list):
        raise PolicyError(f"{path}: expected an array, got {type(raw).__name__}")
    args = typing.get_args(kind)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_read(args[0], item, f"{path}[{i}]") for i, item in enumerate(raw))
    if len(raw) != len(args):
        raise PolicyError(f"{path}: expected {len(args)} items, got {len(raw)}")
    return tuple(_read(arg, item, f"{path}[{i}]") for i, (arg, item) in enumerate(zip(args, raw, strict=True)))


def _dict(kind: Any, raw: Any, path: str) -> dict[str, Any]:
    key_type, value_type = typing.get_args(kind)
    if key_type is not str:
        raise PolicyError(f"{path}: only `dict[str, X]` can be read from JSON")
    if not isinstance(raw, dict):
        raise PolicyError(f"{path}: expected an object, got {type(raw).__name__}")
    return {key: _read(value_type, item, f"{path}[{key!r}]") for key, item in raw.items()}


def _scalar(kind: Any, raw: Any, path: str) -> Any:
    # bool is an int to Python, never to a policy: `true` for a count is a mistake.
    if kind is bool and isinstance(raw, bool):
        return raw
    if kind is int and isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if kind is float and isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if kind is str and isinstance(raw, str):
        return raw
    if kind in (bool, int, float, str):
        raise PolicyError(f"{path}: expected {kind.__name__}, got {raw!r}")
    raise PolicyError(f"{path}: type {kind!r} cannot be read from JSON")
