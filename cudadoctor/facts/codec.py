"""Dataclasses to JSON-ready values and back, and the readers of saved JSON reports: what makes
`check --from report.json` possible. Every schema version ever written keeps a reader here."""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any


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


@functools.cache
def _shape(tp: type) -> tuple[dict[str, Any], tuple[dataclasses.Field, ...]]:
    """A dataclass's resolved type hints and fields, once per class: resolving them per object made
    reading 6,400 GPU processes take seconds."""
    return typing.get_type_hints(tp), dataclasses.fields(tp)


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
        hints, fields = _shape(tp)
        kwargs = {}
        unknown = []
        for f in fields:
            if f.name in data and data[f.name] is None and _collection(hints[f.name], f):
                unknown.append(f.name)  # `null` means unknown (docs/json.md): read as empty, said below
            elif f.name in data:
                kwargs[f.name] = from_jsonable(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise FormatError(f"{where}: missing field {f.name!r}")
        for name in unknown:
            for key, value in NULL_MEANS.get((tp.__name__, name), {}).items():
                kwargs[key] = {**kwargs[key], **value} if isinstance(value, dict) and key in kwargs else value
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


# Where an empty list would state a fact, a null one says it is unknown the way the dataclass can:
# GPUs on a bus nobody read, a process list NVML did not give.
NULL_MEANS: dict[tuple[str, str], dict[str, Any]] = {
    ("PciFacts", "nvidia_gpus"): {"scanned": False},
    ("NvmlDevice", "processes"): {"unsupported": {"compute_processes": "unknown", "graphics_processes": "unknown"}},
}


def _collection(tp: Any, f: dataclasses.Field) -> bool:
    """A list or dict field that cannot hold None but has an empty default: what `null` reads as."""
    return typing.get_origin(tp) in (list, dict) and f.default_factory is not dataclasses.MISSING


# A report is a few hundred KB; anything this deep or large is not one of ours.
MAX_DEPTH = 64


def _depth(data: Any, limit: int = MAX_DEPTH) -> int:
    stack = [(data, 1)]
    deepest = 0
    while stack:
        value, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(value, dict):
            stack.extend((v, d + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, d + 1) for v in value)
    return deepest


def _v1_to_v2(data: dict) -> dict:
    """Schema 1 (cudadoctor 0.1): the same facts, with booleans where 2 allows "unknown"; findings
    carried pre-formatted `details` lines instead of tables. Findings are recomputed on replay, so
    only facts and probes matter; the booleans read as they are."""
    return {**data, "schema_version": 2}


READERS = {1: _v1_to_v2, 2: lambda data: data}


def load_report(text: str) -> tuple[Any, list[Any], dict[str, Any]]:
    """(Facts, probe outcomes, header) from a saved JSON report; FormatError in one line otherwise."""
    import json

    from cudadoctor.facts import Facts
    from cudadoctor.model import ProbeOutcome

    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise FormatError("not a cudadoctor JSON report (nested too deeply)") from None
    # Depth first: whether json.loads itself refuses deep nesting depends on the Python version
    if _depth(data) > MAX_DEPTH:
        raise FormatError("not a cudadoctor JSON report (nested too deeply)")
    if not isinstance(data, dict) or data.get("tool") != "cudadoctor" or "facts" not in data:
        raise FormatError("not a cudadoctor JSON report (no tool/facts fields)")
    version = data.get("schema_version")
    if version not in READERS:
        raise FormatError(
            f"schema_version {version!r} is newer than this cudadoctor reads ({max(READERS)}); upgrade cudadoctor"
            if isinstance(version, int) and version > max(READERS)
            else f"schema_version {version!r} is not one cudadoctor wrote"
        )
    data = READERS[version](data)
    facts = from_jsonable(Facts, data["facts"], "$.facts")
    outcomes = from_jsonable(list[ProbeOutcome], data.get("probes", []), "$.probes")
    system = data["facts"].get("system") if isinstance(data["facts"], dict) else None
    header = {
        "created": data.get("created") if isinstance(data.get("created"), str) else None,
        "version": data.get("version") if isinstance(data.get("version"), str) else None,
        "host": system.get("hostname") if isinstance(system, dict) else None,
    }
    return facts, outcomes, header
