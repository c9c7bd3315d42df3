"""`cudadoctor check`: collect facts (or load saved ones), apply the rules and requirements, build the
report. Shared by the CLI and the pytest plugin."""

from __future__ import annotations

from typing import Any

from cudadoctor.config import ConfigError, Requirements, find_config, from_mapping, load_file, merge
from cudadoctor.facts import Facts
from cudadoctor.model import ProbeOutcome, Severity
from cudadoctor.probes import Context, Probe
from cudadoctor.probes.registry import CHECK_PROBES
from cudadoctor.report import Report
from cudadoctor.runner import run_probes

__all__ = ["CHECK_PROBES", "collect", "diagnose", "load_saved", "requirements", "severity"]


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


def collect(probes: list[Probe], python: str, timeout: float | None) -> tuple[Facts, list[ProbeOutcome]]:
    def load_the_rest() -> None:
        # while the probes run: rules and renderers are not needed before they finish
        import cudadoctor.render.text
        import cudadoctor.rules  # noqa: F401

    results, outcomes = run_probes(probes, Context(timeout=timeout, python=python), meanwhile=load_the_rest)
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
