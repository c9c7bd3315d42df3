"""The settings of `check` from options and config files ([tool.cudadoctor] in pyproject.toml, or
cudadoctor.toml): the gate's requirements, and which finding codes count (select, ignore). Options override
the file. A bad file is a one-line error naming file and key.

One table, KEYS, holds every setting: its config key (and option, --key), what it sets, how a value is
read, and the option's help. The config schema, check's gate options (`gate_options`) and the merge of the
two (`settings`) all come from it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
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
    "Selection",
    "Setting",
    "find_config",
    "fleet_limits",
    "from_mapping",
    "gate_options",
    "load_file",
    "merge",
    "selection_from",
    "settings",
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


def _whole_number(text: str) -> Any:
    """An option's text for a whole number (the config file has TOML's integers)."""
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{text!r} is not a whole number")
    return int(text)


def _number(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None


def _codes(value: Any) -> tuple[str, ...]:
    """Finding codes or code prefixes (CD205, CD2), as a TOML list or one comma-separated string; each must
    name at least one code of the catalogue."""
    from cudadoctor.rules import CATALOGUE

    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{value!r} is not a list of finding codes")
    codes = tuple(dict.fromkeys(v.strip().upper() for v in value if v.strip()))
    unknown = [c for c in codes if not any(code.startswith(c) for code in CATALOGUE)]
    if unknown:
        from cudadoctor.locale import _

        # in the user's language here: a message built with an f-string would stay English (locale/usage.py)
        raise ValueError(
            _("unknown finding code {code}; docs/findings.md lists every code").format(code=", ".join(unknown))
        )
    return codes


def _same(text: str) -> Any:
    return text


@dataclass(frozen=True)
class Setting:
    """One setting of `check`: the config key is KEYS' key, the option is --KEY."""

    field: str  # Requirements' field, or Selection's (gate=False)
    parse: Callable[[Any], Any]  # a TOML value -> the setting (ValueError says why not)
    help: str  # the option's
    metavar: str | None = None  # None: a flag, or a choice
    text: Callable[[str], Any] = _same  # the option's text -> the TOML type `parse` takes
    choices: tuple[str, ...] = ()
    gate: bool = True  # a requirement of the gate; False: which codes count


# config key (and option --KEY) -> the setting
KEYS: dict[str, Setting] = {
    "require-gpus": Setting(
        "require_gpus",
        _positive_int,
        help="Gate: at least N GPUs CUDA can see and that qualify.",
        metavar="N",
        text=_whole_number,
    ),
    "min-free-memory": Setting(
        "min_free_memory", _size, help="Gate: free memory per GPU (8GiB, 8G, 0.5TB).", metavar="SIZE"
    ),
    "min-compute-capability": Setting(
        "min_compute_capability", _text(_cc), help="Gate: lowest compute capability.", metavar="X.Y"
    ),
    "expect-torch-cuda": Setting(
        "expect_torch_cuda", _text(_cuda), help="Gate: torch must be built for this CUDA.", metavar="X.Y"
    ),
    "require-cudnn": Setting("require_cudnn", _flag, help="Gate: cuDNN must be usable."),
    "min-h2d-gbps": Setting(
        "min_h2d_gbps",
        _gbps,
        help="Gate: pinned host-to-device GB/s (measures bandwidth).",
        metavar="G",
        text=_number,
    ),
    "fail-on": Setting(
        "fail_on", _fail_on, help="Lowest severity that fails (default error).", choices=("error", "warning")
    ),
    "select": Setting(
        "select",
        _codes,
        help="Only these finding codes count (CD205, or a prefix: CD2); the others are shown as ignored.",
        metavar="CODES",
        gate=False,
    ),
    "ignore": Setting(
        "ignore",
        _codes,
        help="These finding codes (or prefixes) never fail the check; shown as ignored, kept in JSON.",
        metavar="CODES",
        gate=False,
    ),
}


def gate_options() -> list[Callable[[Any], Any]]:
    """`check`'s options for KEYS, in the table's order."""
    import click

    out = []
    for key, s in KEYS.items():
        if s.choices:
            out.append(click.option(f"--{key}", s.field, type=click.Choice(list(s.choices)), help=s.help))
        elif s.metavar is None:
            out.append(click.option(f"--{key}", s.field, is_flag=True, default=None, help=s.help))
        else:
            out.append(click.option(f"--{key}", s.field, type=str, metavar=s.metavar, help=s.help))
    return out


FIELDS = {s.field for s in KEYS.values()}  # the options `gate_options` adds, by parameter name


@dataclass(frozen=True)
class Selection:
    """Which finding codes count, as ruff selects rules: a finding counts unless the longest prefix that
    names its code is in `ignore` (ties: ignored), or `select` is given and names it nowhere. A finding that
    does not count never changes the exit code, and is still shown (as ignored) and kept in JSON."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    select_source: str | None = None  # the config file each came from; None: the option
    ignore_source: str | None = None

    def why_ignored(self, code: str) -> str | None:
        """None when the code counts; else what ignores it, in the current language: `--ignore`, `not in
        --select`, `ignore in cudadoctor.toml`."""
        chosen = max((len(p) for p in self.select if code.startswith(p)), default=-1 if self.select else 0)
        dropped = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        if dropped >= 0 and dropped >= chosen:
            return _origin("ignore", self.ignore_source)
        if chosen < 0:
            from cudadoctor.locale import _

            return _("not in {option}").format(option=_origin("select", self.select_source))
        return None

    @property
    def any(self) -> bool:
        return bool(self.select or self.ignore)


def _origin(key: str, source: str | None) -> str:
    if source is None:
        return f"--{key}"
    from cudadoctor.locale import _

    return _("{key} in {source}").format(key=key, source=source)


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
        setting = _setting(source, key)
        try:
            parsed = setting.parse(value)
        except ValueError as exc:
            raise ConfigError(f"{source}: {key}: {exc}") from None
        if setting.gate:
            req = replace(req, **{setting.field: parsed})
    return req


def _setting(source: str, key: str) -> Setting:
    if key not in KEYS:
        raise ConfigError(f"{source}: unknown key {key!r} (known: {', '.join(KEYS)})")
    return KEYS[key]


def selection_from(source: str, data: dict[str, Any]) -> Selection:
    """The select and ignore keys of a config table (from_mapping checks the whole table)."""
    given = {}
    for key, setting in KEYS.items():
        if not setting.gate and key in data:
            try:
                given[setting.field] = setting.parse(data[key])
            except ValueError as exc:
                raise ConfigError(f"{source}: {key}: {exc}") from None
            given[setting.field + "_source"] = source
    return Selection(**given)


def merge(base: Requirements, **options: Any) -> Requirements:
    """Options given on the command line (not None / not False) override the file."""
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    return replace(base, **given)


def settings(
    config_file: str | None, given: Mapping[str, Any], warn: Callable[[str], None] | None = None
) -> tuple[Requirements, Selection]:
    """The config file first (an explicit --config, else the nearest one), then the options given on top:
    `given` maps KEYS' fields to the options' text (None / False: not given). ConfigError names the file
    and key, or the option."""
    found = load_file(config_file) if config_file is not None else find_config(warn=warn)
    req = from_mapping(*found) if found else Requirements()
    selection = selection_from(*found) if found else Selection()
    gate: dict[str, Any] = {}
    chosen: dict[str, Any] = {}
    for key, setting in KEYS.items():
        value = given.get(setting.field)
        if value is None or value is False:
            continue
        try:
            parsed = setting.parse(setting.text(value) if isinstance(value, str) else value)
        except ValueError as exc:
            raise ConfigError(f"--{key}: {exc}") from None
        if setting.gate:
            gate[setting.field] = parsed
        else:
            chosen[setting.field], chosen[setting.field + "_source"] = parsed, None
    return merge(req, **gate), replace(selection, **chosen)
