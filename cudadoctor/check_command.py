"""`cudadoctor check`: collect facts (or load saved ones), apply the rules and requirements, build the
report. Shared by the CLI and the pytest plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cudadoctor.config import ConfigError, Requirements, find_config, from_mapping, load_file, merge
from cudadoctor.model import ProbeOutcome, Severity
from cudadoctor.probes import Context, Probe
from cudadoctor.probes.registry import ALL_PROBES, CHECK_PROBES, MEASURE_PROBES, TARGET_PYTHON_PROBES
from cudadoctor.runner import run_probes

if TYPE_CHECKING:  # facts, report and rules load while the probes run (see collect)
    from cudadoctor.facts import Facts
    from cudadoctor.report import Report

__all__ = [
    "ALL_PROBES",
    "CHECK_PROBES",
    "MEASURE_PROBES",
    "TARGET_PYTHON_PROBES",
    "collect",
    "diagnose",
    "load_saved",
    "requirements",
    "severity",
]


def severity(name: str) -> Severity:
    return Severity(name)


def requirements(config_file: str | None, options: dict[str, Any]) -> Requirements:
    """Config file first (an explicit --config, else the nearest one), then options on top."""
    from cudadoctor.config import KEYS

    found = load_file(config_file) if config_file else find_config()
    base = from_mapping(*found) if found else Requirements()
    parsed: dict[str, Any] = {}
    for key, (name, parse) in KEYS.items():
        value = options.get(name)
        if value is None or value is False:
            continue
        if name == "require_gpus":
            value = _int_option(key, value)
        elif name == "min_h2d_gbps":
            value = _float_option(key, value)
        try:
            parsed[name] = parse(value)
        except ValueError as exc:
            raise ConfigError(f"--{key}: {exc}") from None
    return merge(base, **parsed)


def _int_option(key: str, value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"--{key}: {value!r} is not a whole number") from None


def _float_option(key: str, value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"--{key}: {value!r} is not a number") from None


def select(only: set[str], skip: set[str], full: bool, req: Requirements | None = None) -> list[Probe]:
    """--only picks from every probe; otherwise the checks, plus the measurements with --full (or when a
    requirement needs one); --skip removes."""
    if only:
        chosen = [p for p in ALL_PROBES if p.name in only]
    else:
        wanted = {p.name for p in CHECK_PROBES}
        if full:
            wanted |= {p.name for p in MEASURE_PROBES}
        if req is not None and req.min_h2d_gbps is not None:
            wanted.add("bandwidth")
        chosen = [p for p in ALL_PROBES if p.name in wanted]
    return [p for p in chosen if p.name not in skip]


def collect(
    probes: list[Probe], python: str, timeout: float | None, transfer_size: int | None = None
) -> tuple[Facts, list[ProbeOutcome]]:
    def load_the_rest() -> None:
        # while the probes run: facts, rules and renderers are not needed before they finish
        import cudadoctor.facts
        import cudadoctor.render.text
        import cudadoctor.report
        import cudadoctor.rules  # noqa: F401

    ctx = Context(timeout=timeout, python=python, measurements=[p.name for p in probes if p in MEASURE_PROBES])
    if transfer_size:
        ctx.transfer_size = transfer_size
    results, outcomes = run_probes(probes, ctx, meanwhile=load_the_rest)
    from cudadoctor.facts import Facts

    outcomes += [ProbeOutcome(p.name, "skipped", 0.0) for p in CHECK_PROBES if p not in probes]
    return Facts(**results), outcomes


def load_saved(path: str) -> tuple[Facts, list[ProbeOutcome]]:
    """ValueError with a one-line message when the file is unreadable or not a report."""
    from cudadoctor.report import load_facts
    from cudadoctor.serial import FormatError

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ValueError(f"cannot read --from {path}: {exc.strerror or exc}") from None
    try:
        return load_facts(text)
    except FormatError as exc:
        raise ValueError(f"--from {path}: {exc}") from None


def diagnose(facts: Facts, outcomes: list[ProbeOutcome], req: Requirements | None = None) -> Report:
    from cudadoctor.report import build
    from cudadoctor.rules import evaluate

    req = req or Requirements()
    findings = evaluate(facts, outcomes, req)
    rep = build("check", facts, outcomes, findings, severity(req.fail_on))
    rep.requirements = req if req.any else None
    return rep
