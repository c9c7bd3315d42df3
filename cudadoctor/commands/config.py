"""Gate requirements from options and config files ([tool.cudadoctor] in pyproject.toml, or
cudadoctor.toml). Options override the file. A bad file is a one-line error naming file and key."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any

from cudadoctor.knowledge.architectures import parse_cc
from cudadoctor.knowledge.units import parse_size
from cudadoctor.rules.requirements import Requirements


class ConfigError(ValueError):
    pass


__all__ = [
    "FLEET_KEYS",
    "KEYS",
    "ConfigError",
    "Requirements",
    "find_config",
    "fleet_limits",
    "from_mapping",
    "load_file",
    "merge",
]


def _cc(value: str) -> str:
    if parse_cc(value) is None:
        raise ValueError(f"{value!r} is not a compute capability like 8.0")
    return value


def _cuda(value: str) -> str:
    if parse_cc(value) is None:  # the same shape: ASCII digits, one dot
        raise ValueError(f"{value!r} is not a CUDA version like 12.8")
    return value


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r} is not a whole number of at least 1")
    return value


def _gbps(value: Any) -> float:
    # nan would compare false with every rate: a gate that never fails
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ValueError(f"{value!r} is not a positive number of GB/s")
    return float(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


def _fail_on(value: Any) -> str:
    if value not in ("error", "warning"):
        raise ValueError(f"{value!r} is not one of error, warning")
    return value


def _size(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, (int, float)):  # a bare number: bytes to some, GiB to others
        raise ValueError(
            f'{value!r} has no unit: write "{value}GiB", "{value}GB" or "{value}MiB" ("{value}B" for bytes)'
        )
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a size (examples: 8GiB, 8G, 8192MiB)")
    return parse_size(value)


def _text(check):  # type: ignore[no-untyped-def]
    def parse(value: Any) -> str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # min-compute-capability = 8.0 written without quotes
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not text")
        return check(value)

    return parse


# config key -> (field, parser)
KEYS = {
    "require-gpus": ("require_gpus", _positive_int),
    "min-free-memory": ("min_free_memory", _size),
    "min-compute-capability": ("min_compute_capability", _text(_cc)),
    "expect-torch-cuda": ("expect_torch_cuda", _text(_cuda)),
    "require-cudnn": ("require_cudnn", _flag),
    "min-h2d-gbps": ("min_h2d_gbps", _gbps),
    "fail-on": ("fail_on", _fail_on),
}


CONFIG_LIMIT = 1 << 20  # bytes: a config file is a few lines


def _load_toml(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    from cudadoctor.backends.files import InputError, read_text

    try:  # a regular file of bounded size: a FIFO or /dev/zero must not hang the doctor or fill its memory
        text = read_text(path, CONFIG_LIMIT, "config file", utf8=True)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _section(data: dict[str, Any], source: str) -> Any:
    tool = data.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise ConfigError(f"{source}: tool: expected a table, got {type(tool).__name__}")
    return tool.get("cudadoctor")


def find_config(start: str | None = None, warn: Any = None) -> tuple[str, dict[str, Any]] | None:
    """cudadoctor.toml, else pyproject.toml with [tool.cudadoctor], in `start` or a parent directory.

    A pyproject.toml that is not valid TOML belongs to some other project: `warn` is told and the
    search goes on. Ours (cudadoctor.toml, or a [tool.cudadoctor] that is wrong) is an error."""
    here = os.path.abspath(start or os.getcwd())
    while True:
        own = os.path.join(here, "cudadoctor.toml")
        if os.path.isfile(own):
            return own, _load_toml(own)
        if os.path.lexists(own) and warn is not None:  # a FIFO, a device, a dangling link: not read
            warn(f"ignoring {own}: not a regular file")
        pyproject = os.path.join(here, "pyproject.toml")
        if os.path.isfile(pyproject):
            try:
                data = _load_toml(pyproject)
            except ConfigError as exc:
                if warn is not None:
                    warn(f"ignoring {exc}")
                data = {}
            section = _section(data, pyproject) if isinstance(data.get("tool"), dict) else None
            if section is not None:
                return f"{pyproject} [tool.cudadoctor]", section
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def load_file(path: str) -> tuple[str, dict[str, Any]]:
    if not path:
        raise ConfigError("--config: an empty path")
    data = _load_toml(path)
    if os.path.basename(path) == "pyproject.toml":
        return f"{path} [tool.cudadoctor]", _section(data, path) or {}
    return path, data


# [fleet] (in cudadoctor.toml) or [tool.cudadoctor.fleet]: the expected figures `cudadoctor fleet` judges
# against, overriding knowledge/gpu_perf.py; its options override these.
FLEET_KEYS = {
    "min-tflops": "min_tflops",
    "min-memory-gbps": "min_memory_gbps",
    "min-h2d-gbps": "min_h2d_gbps",
    "min-busbw": "min_busbw",
}


def fleet_limits(found: tuple[str, dict[str, Any]] | None) -> dict[str, float]:
    """The [fleet] table of a config (find_config's result), checked: {"min_tflops": 600.0, …}."""
    if not found:
        return {}
    source, data = found
    table = data.get("fleet") if isinstance(data, dict) else None
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: fleet: expected a table")
    out = {}
    for key, value in table.items():
        if key not in FLEET_KEYS:
            raise ConfigError(f"{source}: fleet: unknown key {key!r} (known: {', '.join(FLEET_KEYS)})")
        try:
            out[FLEET_KEYS[key]] = _gbps(value)
        except ValueError as exc:
            raise ConfigError(f"{source}: fleet.{key}: {exc}") from None
    return out


def from_mapping(source: str, data: dict[str, Any]) -> Requirements:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a table of settings")
    req = Requirements()
    for key, value in data.items():
        if key == "fleet":
            continue  # fleet's expected figures: fleet_limits
        if key not in KEYS:
            raise ConfigError(f"{source}: unknown key {key!r} (known: {', '.join(KEYS)})")
        name, parse = KEYS[key]
        try:
            req = replace(req, **{name: parse(value)})
        except ValueError as exc:
            raise ConfigError(f"{source}: {key}: {exc}") from None
    return req


def merge(base: Requirements, **options: Any) -> Requirements:
    """Options given on the command line (not None / not False) override the file."""
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    return replace(base, **given)
