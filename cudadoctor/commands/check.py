"""`cudadoctor check` (and `bench`): collect facts (or load saved ones), apply the rules and the gate's
requirements, build the one report and render it. The pytest plugin shares collect() and diagnose()."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from cudadoctor import locale as i18n
from cudadoctor import probes
from cudadoctor.cli import Seconds, complete_probe_names, echo, fail, names_option, run_command, size_option
from cudadoctor.commands.config import ConfigError, Requirements, find_config, from_mapping, load_file, merge
from cudadoctor.exitcodes import EXIT_INCOMPLETE, EXIT_USAGE
from cudadoctor.locale import _
from cudadoctor.model import Finding, ProbeOutcome, Severity, Source

if TYPE_CHECKING:  # facts, report and rules load while the probes run (see collect)
    from cudadoctor.facts import Facts
    from cudadoctor.report import Report

FORMATS = ("text", "json", "markdown", "openmetrics")
MAX_REPORT = 64 << 20  # a saved report is a few hundred KB


def requirements(config_file: str | None, options: dict[str, Any]) -> Requirements:
    """Config file first (an explicit --config, else the nearest one), then options on top."""
    from cudadoctor.commands.config import KEYS

    found = load_file(config_file) if config_file is not None else find_config(warn=_warn)
    base = from_mapping(*found) if found else Requirements()
    parsed: dict[str, Any] = {}
    for key, (name, parse) in KEYS.items():
        value = options.get(name)
        if value is None or value is False:
            continue
        try:
            parsed[name] = parse(_option_value(name, value))
        except ValueError as exc:
            raise ConfigError(f"--{key}: {exc}") from None
    return merge(base, **parsed)


def _warn(message: str) -> None:
    echo(f"cudadoctor: warning: {message}", err=True)


def _option_value(name: str, value: Any) -> Any:
    """Options arrive as text; the config parsers take TOML's types."""
    if name == "require_gpus" and isinstance(value, str):
        if not (value.isascii() and value.isdigit()):
            raise ValueError(f"{value!r} is not a whole number")
        return int(value)
    if name == "min_h2d_gbps" and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    return value


def collect(
    chosen: list[probes.Probe],
    python: str,
    timeout: float | None,
    transfer_size: int | None = None,
    registry: Sequence[probes.Probe] = probes.REGISTRY,
) -> tuple[Facts, list[ProbeOutcome]]:
    def load_the_rest() -> None:
        # while the probes run: facts, rules and renderers are not needed before they finish
        import cudadoctor.facts
        import cudadoctor.render.text
        import cudadoctor.rules  # noqa: F401

    ctx = probes.Context(timeout=timeout, python=python)
    if transfer_size:
        ctx.transfer_size = transfer_size
    results, outcomes = probes.run_probes(chosen, ctx, meanwhile=load_the_rest)
    from cudadoctor.facts import Facts

    outcomes += [ProbeOutcome(p.name, "skipped", 0.0) for p in registry if p.default and p not in chosen]
    return Facts(**results), outcomes


def load_saved(path: str) -> tuple[Facts, list[ProbeOutcome], Source]:
    """ValueError with a one-line message when the file is unreadable or not a report."""
    from cudadoctor.backends.files import InputError, read_text
    from cudadoctor.facts.codec import FormatError, load_report

    try:
        text = read_text(path, MAX_REPORT, "report")
    except InputError as exc:
        raise ValueError(f"--from: {exc}") from None
    try:
        facts, outcomes, header = load_report(text)
    except FormatError as exc:
        raise ValueError(f"--from {path}: {exc}") from None
    return facts, outcomes, Source(path=path, **header)


def expected_probes(outcomes: list[ProbeOutcome]) -> list[str]:
    """The checks a report is judged against: the default ones, and any measurement that ran."""
    ran = {o.name for o in outcomes}
    return [p.name for p in probes.REGISTRY if p.default or p.name in ran]


def diagnose(
    facts: Facts,
    outcomes: list[ProbeOutcome],
    req: Requirements | None = None,
    source: Source | None = None,
    command: str = "check",
    found: list[Finding] | None = None,
) -> Report:
    """The report of `found` (the rules' findings, evaluated here when not given) in the current language:
    the rules run once, and a report in another language only translates their messages again."""
    from cudadoctor.report import build
    from cudadoctor.rules import evaluate

    req = req or Requirements()
    findings = found if found is not None else evaluate(facts, outcomes, req)
    from cudadoctor.render.localize import findings as localized

    findings = localized(findings)  # the current language's titles, pages, fix labels, table headers
    return build(
        command,
        facts,
        outcomes,
        findings,
        Severity(req.fail_on),
        expected=expected_probes(outcomes),
        requirements=req if req.any else None,
        source=source,
    )


def _needed(req: Requirements) -> set[str]:
    """The probes a requirement cannot be judged without, even under --only: which GPUs a job sees
    needs the environment (CUDA_VISIBLE_DEVICES) besides the driver; a bandwidth needs its measurement."""
    needed = set()
    if req.require_gpus is not None or req.min_free_memory is not None or req.min_compute_capability is not None:
        needed |= {"driver", "system"}
    if req.expect_torch_cuda is not None or req.require_cudnn:
        needed.add("torch")
    if req.min_h2d_gbps is not None:
        needed.add("bandwidth")
    return needed


def _check_writable(path: str, option: str) -> None:
    if not path:
        fail(f"{option}: an empty path")
    if os.path.isdir(path):
        fail(f"cannot write {option} {path}: it is a directory")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        fail(f"cannot write {option} {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        fail(f"cannot write {option} {path}: permission denied")


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", code=3)


def _target_python(python: str | None, timeout: float | None) -> str:
    from cudadoctor.backends.torchenv import ENV_INTERPRETERS, check_interpreter, interpreter_in

    if python is None:
        return sys.executable
    if not python:
        fail("--python: an empty path")
    resolved = shutil.which(python) or python
    if not os.path.exists(resolved):
        fail(f"--python {python}: no such file")
    if os.path.isdir(resolved):  # a venv or conda environment: its interpreter
        found = interpreter_in(resolved)
        if found is None:
            like = os.path.join(python, *ENV_INTERPRETERS[2 if sys.platform == "win32" else 0].split("/"))
            fail(
                _("--python {path}: no Python interpreter in this directory; pass one, like {like}").format(
                    path=python, like=like
                )
            )
        resolved = found
    problem = check_interpreter(resolved, timeout=min(timeout or 15.0, 15.0))
    if problem:
        fail(f"--python {python}: {problem}", code=EXIT_INCOMPLETE if problem.failed else EXIT_USAGE)
    return resolved


def _collect_with_progress(
    chosen: list[probes.Probe], python: str, timeout: float | None, size: int | None, registry: Any
) -> Any:
    """The --full checks take seconds (a compile on the CPU, ~10): show what runs on a terminal (stderr),
    never in pipes."""
    names = [p.name for p in chosen if not p.default]
    if not names or not sys.stderr.isatty():
        return collect(chosen, python, timeout, size, registry)
    from rich.console import Console

    line = i18n._("Checking {names} in a torch child process…").format(names=", ".join(names))
    with Console(stderr=True).status(line):
        return collect(chosen, python, timeout, size, registry)


def _write_atomically(path: str, text: str) -> None:
    """Write beside the target, then rename over it: a reader (node_exporter's textfile collector) sees
    the old file or the new one, never half of one."""
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = -1, ""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cudadoctor-", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fd = -1
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the metrics from a collector running as another user
        os.replace(tmp, path)
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        fail(f"cannot write {path}: {exc.strerror or exc}", code=3)


def emit(
    rep: Report,
    fmt: str,
    output: str | None,
    redact: bool,
    verbose: bool,
    machine: Report | None = None,
    metrics_file: str | None = None,
) -> None:
    """`machine`: the same report in English, for the files --output and --metrics-file write (machines
    read them)."""
    import json

    from cudadoctor.render import markdown, openmetrics, text
    from cudadoctor.render.redact import report_data

    data = report_data(rep, redact)
    machine_data = data if machine is None else report_data(machine, redact)
    json_text = json.dumps(data, indent=2) + "\n"
    if output:
        _write(output, json_text if machine is None else json.dumps(machine_data, indent=2) + "\n")
    if metrics_file:
        _write_atomically(metrics_file, openmetrics.render(machine_data))
    if fmt == "json":
        echo(json_text, nl=False)
    elif fmt == "openmetrics":
        echo(openmetrics.render(data), nl=False)
    elif fmt == "markdown":
        echo(markdown.render(data))
    else:
        text.render(rep, text.make_console(), verbose=verbose, redact=redact)


def _refuse_conflicts(
    fmt: str,
    as_json: bool,
    from_file: str | None,
    timeout: float | None,
    transfer_size: int | None,
    full: bool,
    only: str | None,
    skip: str | None,
    python: str | None,
) -> None:
    """Options that contradict each other, or one that another makes meaningless, are a usage error:
    silently obeying one of them prints what the user did not ask for."""
    if as_json and fmt != "text" and fmt != "json":
        fail(_("--json and --format {format} ask for two formats: give one").format(format=fmt))
    if from_file is not None:
        given = [
            name
            for name, value in (
                ("--only", only),
                ("--skip", skip),
                ("--full", full),
                ("--python", python),
                ("--timeout", timeout),
                ("--transfer-size", transfer_size),
            )
            if value
        ]
        if given:
            fail(
                _("--from replays a saved report, which runs no probe: it does not go with {options}").format(
                    options=", ".join(given)
                )
            )
    if only and full:
        measures = ",".join(p.name for p in probes.REGISTRY if not p.default)
        fail(
            _(
                "--only picks the checks, --full adds the measurements to all: give one (--only {only},{measures})"
            ).format(only=only, measures=measures)
        )


def run_check(
    fmt: str,
    as_json: bool,
    output: str | None,
    redact: bool,
    from_file: str | None,
    timeout: float | None,
    python: str | None,
    full: bool,
    transfer_size: int | None,
    only: str | None,
    skip: str | None,
    config_file: str | None,
    junit: str | None,
    verbose: bool,
    gate: dict[str, Any],
    metrics_file: str | None = None,
    command: str = "check",
    registry: Sequence[probes.Probe] = probes.REGISTRY,
) -> int:
    _refuse_conflicts(fmt, as_json, from_file, timeout, transfer_size, full, only, skip, python)
    for option, path in (("--output", output), ("--junit", junit), ("--metrics-file", metrics_file)):
        if path is not None:
            _check_writable(path, option)
    if python is not None and not python:
        fail("--python: an empty path")
    try:
        req = requirements(config_file, gate)
    except ValueError as exc:  # ConfigError and bad option values
        fail(str(exc))
    source = None
    if from_file is not None:
        try:
            facts, outcomes, source = load_saved(from_file)
        except ValueError as exc:
            fail(str(exc))
    else:
        known = [p.name for p in registry]
        chosen = probes.select(
            names_option("--only", only, known),
            names_option("--skip", skip, known),
            full,
            _needed(req),
            registry,
        )
        if not chosen:
            fail("--only and --skip leave no probe to run")
        if transfer_size and not any(p.name == "bandwidth" for p in chosen):
            fail("--transfer-size sizes the bandwidth measurement, which does not run: add --full or --only bandwidth")
        if any(p.where != probes.HERE for p in chosen):
            python = _target_python(python, timeout)
        facts, outcomes = _collect_with_progress(chosen, python or sys.executable, timeout, transfer_size, registry)
    from cudadoctor.rules import evaluate

    found = evaluate(facts, outcomes, req)  # once: each finding keeps its messages' templates
    rep = machine = diagnose(facts, outcomes, req, source, command, found)
    github = os.environ.get("GITHUB_ACTIONS") == "true"
    if (output or junit or github or metrics_file) and i18n.current() != i18n.ENGLISH and not i18n.explicit():
        with i18n.use(i18n.ENGLISH):  # JSON, JUnit and annotations stay English unless --lang asked otherwise
            machine = diagnose(facts, outcomes, req, source, command, found)
    english = machine if machine is not rep else None
    emit(rep, "json" if as_json else fmt, output, redact, verbose, english, metrics_file)
    if junit:
        from cudadoctor.render.junit import render as junit_xml

        _write(junit, junit_xml(machine))
    if github:
        from cudadoctor.render.github import annotations

        for line in annotations(machine):
            echo(line, err=fmt == "json" or as_json)
    return rep.exit_code


def _options(fn: Any) -> Any:
    """The options check and bench share."""
    for decorator in reversed(
        [
            click.option(
                "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Report format."
            ),
            click.option("--json", "as_json", is_flag=True, help="Same as --format json."),
            click.option(
                "--output", "-o", type=str, metavar="FILE", help="Also write the JSON report to FILE (any --format)."
            ),
            click.option(
                "--metrics-file",
                type=str,
                metavar="FILE",
                help="Also write OpenMetrics to FILE, atomically (node_exporter's textfile collector).",
            ),
            click.option("--redact", is_flag=True, help="Replace host and user names and GPU/MIG UUIDs in the output."),
            click.option(
                "--timeout",
                type=Seconds(min=0.5),
                metavar="SECONDS",
                help=f"One time bound for every probe instead of its own: {probes.bounds_text()}.",
            ),
            click.option(
                "--python",
                "python",
                type=str,
                metavar="PATH",
                help="Diagnose the torch of another interpreter (a venv or conda env); nothing is installed.",
            ),
            click.option(
                "--transfer-size",
                callback=size_option,
                metavar="SIZE",
                help="Bytes per timed copy in the bandwidth measurement (default 256MiB; capped by free memory).",
            ),
            click.option("-v", "--verbose", is_flag=True, help="Show probe timings and tracebacks."),
        ]
    ):
        fn = decorator(fn)
    return fn


@click.command()
@_options
@click.option("--from", "from_file", type=str, metavar="REPORT.json", help="Re-run the rules on a saved JSON report.")
@click.option("--full", is_flag=True, help="Also measure: copy bandwidth per GPU and a training smoke test.")
@click.option(
    "--only",
    type=str,
    metavar="PROBES",
    shell_complete=complete_probe_names,
    help=f"Run only these probes: {probes.help_text()}.",
)
@click.option(
    "--skip",
    type=str,
    metavar="PROBES",
    shell_complete=complete_probe_names,
    help="Skip these probes (comma-separated).",
)
@click.option(
    "--config",
    "config_file",
    type=str,
    metavar="FILE",
    help="Requirements file (default: cudadoctor.toml, or [tool.cudadoctor] in pyproject.toml).",
)
@click.option("--require-gpus", type=str, metavar="N", help="Gate: at least N GPUs CUDA can see and that qualify.")
@click.option("--min-free-memory", type=str, metavar="SIZE", help="Gate: free memory per GPU (8GiB, 8G, 0.5TB).")
@click.option("--min-compute-capability", type=str, metavar="X.Y", help="Gate: lowest compute capability.")
@click.option("--expect-torch-cuda", type=str, metavar="X.Y", help="Gate: torch must be built for this CUDA.")
@click.option("--require-cudnn", is_flag=True, default=None, help="Gate: cuDNN must be usable.")
@click.option("--min-h2d-gbps", type=str, metavar="G", help="Gate: pinned host-to-device GB/s (measures bandwidth).")
@click.option("--fail-on", type=click.Choice(["error", "warning"]), help="Lowest severity that fails (default error).")
@click.option("--junit", type=str, metavar="FILE", help="Also write a JUnit XML report to FILE.")
def check(**options: Any) -> None:
    """Diagnose this machine: driver, CUDA, toolkit, torch, devices; every problem with its fix.

    With requirements (options or config) it is a CI health gate: an unmet requirement is a finding,
    and the exit code says whether the machine passes.
    """
    gate = {k: options.pop(k) for k in list(options) if k in _GATE_OPTIONS}
    run_command(run_check, gate=gate, registry=_registry(), **options)


def _registry() -> Sequence[probes.Probe]:
    """The probes to use: the registry, or the ones a caller injected through click's context object
    (`cli.main(obj={"probes": [...]})`, as the tests do)."""
    obj = click.get_current_context().obj
    return obj.get("probes", probes.REGISTRY) if isinstance(obj, dict) else probes.REGISTRY


_GATE_OPTIONS = (
    "require_gpus",
    "min_free_memory",
    "min_compute_capability",
    "expect_torch_cuda",
    "require_cudnn",
    "min_h2d_gbps",
    "fail_on",
)


@click.command()
@_options
def bench(**options: Any) -> None:
    """`check --full`: every check, plus copy bandwidth per GPU and the training smoke test, so it
    reaches the same verdict as check."""
    run_command(
        run_check,
        from_file=None,
        full=True,
        only=None,
        skip=None,
        config_file=None,
        junit=None,
        gate={},
        command="bench",
        registry=_registry(),
        **options,
    )
