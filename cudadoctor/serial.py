"""Dataclasses to JSON-ready values and back; what makes `check --from report.json` possible."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class FormatError(ValueError):
    """The data does not have the shape the dataclass expects."""


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


def from_jsonable(tp: Any, data: Any, where: str = "$") -> Any:
    """Rebuild a value of type `tp` from JSON data, checking shapes as it goes."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return from_jsonable(arg, data, where)
            except FormatError as exc:
                errors.append(str(exc))
        raise FormatError(errors[0] if errors else f"{where}: unexpected null")
    if origin is list:
        if not isinstance(data, list):
            raise FormatError(f"{where}: expected a list")
        (item,) = typing.get_args(tp)
        return [from_jsonable(item, v, f"{where}[{i}]") for i, v in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise FormatError(f"{where}: expected an object")
        _, val = typing.get_args(tp)
        return {k: from_jsonable(val, v, f"{where}.{k}") for k, v in data.items()}
    if tp is Any:
        return data
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise FormatError(f"{where}: expected an object")
        hints = typing.get_type_hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = from_jsonable(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise FormatError(f"{where}: missing field {f.name!r}")
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            raise FormatError(f"{where}: {data!r} is not one of {[m.value for m in tp]}") from None
    if tp is float and isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    if tp in (int, str, bool):
        if type(data) is not tp:
            raise FormatError(f"{where}: expected {tp.__name__}, got {type(data).__name__}")
        return data
    raise FormatError(f"{where}: cannot read type {tp!r}")
