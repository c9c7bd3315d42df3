"""`cudadoctor check` (and `bench`): collect facts (or load saved ones), apply the rules and the gate's
requirements, build the one report and render it. The pytest plugin shares collect() and diagnose()."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import click

from cudadoctor import locale as i18n
from cudadoctor import probes
from cudadoctor.commands import config
from cudadoctor.commands.config import Requirements, Selection
from cudadoctor.commands.options import Seconds, apply, build, complete_probe_names, names_option, size_option
from cudadoctor.commands.output import check_writable, echo, fail, run_command, write, write_atomically
from cudadoctor.exitcodes import EXIT_INCOMPLETE, EXIT_USAGE
from cudadoctor.locale import _
from cudadoctor.model import Finding, ProbeOutcome, Severity, Source

if TYPE_CHECKING:  # facts, report and rules load while the probes run (see collect)
    from cudadoctor.facts import Facts
    from cudadoctor.report import Report

FORMATS = ("text", "json", "markdown", "openmetrics")
MAX_REPORT = 64 << 20  # a saved report is a few hundred KB


@dataclass(frozen=True)
class CheckOptions:
    """What `check` (or `bench`) was asked: one field per option, as click parsed it."""

    fmt: str = "text"
    as_json: bool = False
    output: str | None = None
    metrics_file: str | None = None
    redact: bool = False
    timeout: float | None = None
    python: str | None = None
    transfer_size: int | None = None
    verbose: bool = False
    from_file: str | None = None
    full: bool = False
    only: str | None = None
    skip: str | None = None
    config_file: str | None = None
    junit: str | None = None
    # the options of config.KEYS as given (their text), by field: the gate's requirements, select, ignore
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    command: str = "check"

    @classmethod
    def from_click(cls, given: dict[str, Any], **extra: Any) -> CheckOptions:
        settings = {k: given.pop(k) for k in list(given) if k in config.FIELDS}
        return build(cls, given, settings=MappingProxyType(settings), **extra)

    @property
    def format(self) -> str:
        return "json" if self.as_json else self.fmt


def settings(config_file: str | None, options: Mapping[str, Any]) -> tuple[Requirements, Selection]:
    """The gate's requirements and which codes count: config file first (an explicit --config, else the
    nearest one, a broken pyproject.toml of another project warned about), then options on top."""
    return config.settings(config_file, options, warn=_warn)


def requirements(config_file: str | None, options: Mapping[str, Any]) -> Requirements:
    return settings(config_file, options)[0]


def _warn(message: str) -> None:
    echo(f"cudadoctor: warning: {message}", err=True)


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


@dataclass
class Judged:
    """A report and the findings that do not count (--select, --ignore), each with what ignored it: they
    never change the status, and are still shown (one line each) and kept in JSON."""

    report: Report
    ignored: list[tuple[Finding, str]] = field(default_factory=list)


def judge(
    facts: Facts,
    outcomes: list[ProbeOutcome],
    found: list[Finding],
    req: Requirements,
    selection: Selection,
    source: Source | None = None,
    command: str = "check",
) -> Judged:
    """The report of the findings that count, in the current language; the others beside it."""
    why = {f.code: selection.why_ignored(f.code) for f in found}
    rep = diagnose(facts, outcomes, req, source, command, [f for f in found if why[f.code] is None])
    dropped = [f for f in found if why[f.code] is not None]
    if not dropped:
        return Judged(rep)
    from cudadoctor.render.localize import findings as localized

    return Judged(rep, [(f, why[f.code] or "") for f in localized(dropped)])


def report_json(judged: Judged, redact: bool) -> Any:
    """The JSON report: the findings that count, then each ignored one with `"ignored": true`."""
    import dataclasses

    from cudadoctor.render.redact import report_data

    data = report_data(judged.report, redact)
    if judged.ignored:
        shown = dataclasses.replace(judged.report, findings=[f for f, _why in judged.ignored])
        extra = report_data(shown, redact)["findings"]
        for item, (_finding, why) in zip(extra, judged.ignored, strict=True):
            item["ignored"], item["ignored_by"] = True, why
        data["findings"] = [*data["findings"], *extra]
    return data


def ignored_lines(judged: Judged, redact: bool, width: int = 80) -> list[str]:
    """One line (wrapped to the width) for each ignored error or warning: never silently dropped."""
    from cudadoctor.render.layout import wrap
    from cudadoctor.render.redact import scrubber

    scrub = scrubber(judged.report, redact)
    lines: list[str] = []
    for f, why in judged.ignored:
        if f.severity not in (Severity.ERROR, Severity.WARNING):
            continue
        line = _("ignored: {code} {title} ({why})").format(code=f.code, title=f.title, why=why)
        parts = wrap(scrub(line), width - 2)
        lines += [parts[0], *("  " + p for p in parts[1:])]
    return lines


def emit(
    judged: Judged,
    fmt: str,
    output: str | None,
    redact: bool,
    verbose: bool,
    machine: Judged | None = None,
    metrics_file: str | None = None,
) -> None:
    """`machine`: the same report in English, for the files --output and --metrics-file write (machines
    read them). Ignored findings are in the JSON, and a line each under the text report; the Markdown
    and OpenMetrics renderings count only the findings that count."""
    import json

    from cudadoctor.render import markdown, openmetrics, text
    from cudadoctor.render.redact import report_data

    rep = judged.report
    data = report_data(rep, redact)
    machine_data = data if machine is None else report_data(machine.report, redact)
    json_text = json.dumps(report_json(judged, redact), indent=2) + "\n"
    if output:
        write(output, json_text if machine is None else json.dumps(report_json(machine, redact), indent=2) + "\n")
    if metrics_file:
        write_atomically(metrics_file, openmetrics.render(machine_data))
    if fmt == "json":
        echo(json_text, nl=False)
    elif fmt == "openmetrics":
        echo(openmetrics.render(data), nl=False)
    elif fmt == "markdown":
        echo(markdown.render(data))
    else:
        console = text.make_console()
        text.render(rep, console, verbose=verbose, redact=redact)
        for line in ignored_lines(judged, redact, min(console.width, 80)):
            echo(line)


def _refuse_conflicts(o: CheckOptions) -> None:
    """Options that contradict each other, or one that another makes meaningless, are a usage error:
    silently obeying one of them prints what the user did not ask for."""
    if o.as_json and o.fmt != "text" and o.fmt != "json":
        fail(_("--json and --format {format} ask for two formats: give one").format(format=o.fmt))
    if o.from_file is not None:
        given = [
            name
            for name, value in (
                ("--only", o.only),
                ("--skip", o.skip),
                ("--full", o.full),
                ("--python", o.python),
                ("--timeout", o.timeout),
                ("--transfer-size", o.transfer_size),
            )
            if value
        ]
        if given:
            fail(
                _("--from replays a saved report, which runs no probe: it does not go with {options}").format(
                    options=", ".join(given)
                )
            )
    if o.only and o.full:
        measures = ",".join(p.name for p in probes.REGISTRY if not p.default)
        fail(
            _(
                "--only picks the checks, --full adds the measurements to all: give one (--only {only},{measures})"
            ).format(only=o.only, measures=measures)
        )


def run_check(o: CheckOptions, registry: Sequence[probes.Probe] = probes.REGISTRY) -> int:
    _refuse_conflicts(o)
    for option, path in (("--output", o.output), ("--junit", o.junit), ("--metrics-file", o.metrics_file)):
        if path is not None:
            check_writable(path, option)
    if o.python is not None and not o.python:
        fail("--python: an empty path")
    try:
        req, selection = settings(o.config_file, o.settings)
    except ValueError as exc:  # ConfigError and bad option values
        fail(str(exc))
    source = None
    if o.from_file is not None:
        try:
            facts, outcomes, source = load_saved(o.from_file)
        except ValueError as exc:
            fail(str(exc))
    else:
        facts, outcomes = _run_probes(o, req, registry)
    from cudadoctor.rules import evaluate

    found = evaluate(facts, outcomes, req)  # once: each finding keeps its messages' templates
    shown = machine = judge(facts, outcomes, found, req, selection, source, o.command)
    github = os.environ.get("GITHUB_ACTIONS") == "true"
    if (o.output or o.junit or github or o.metrics_file) and i18n.current() != i18n.ENGLISH and not i18n.explicit():
        with i18n.use(i18n.ENGLISH):  # JSON, JUnit and annotations stay English unless --lang asked otherwise
            machine = judge(facts, outcomes, found, req, selection, source, o.command)
    english = machine if machine is not shown else None
    emit(shown, o.format, o.output, o.redact, o.verbose, english, o.metrics_file)
    if o.junit:
        from cudadoctor.render.junit import render as junit_xml

        write(o.junit, junit_xml(machine.report))
    if github:
        from cudadoctor.render.github import annotations

        for line in annotations(machine.report):
            echo(line, err=o.format == "json")
    return shown.report.exit_code


def _run_probes(
    o: CheckOptions, req: Requirements, registry: Sequence[probes.Probe]
) -> tuple[Facts, list[ProbeOutcome]]:
    known = [p.name for p in registry]
    chosen = probes.select(
        names_option("--only", o.only, known),
        names_option("--skip", o.skip, known),
        o.full,
        _needed(req),
        registry,
    )
    if not chosen:
        fail("--only and --skip leave no probe to run")
    if o.transfer_size and not any(p.name == "bandwidth" for p in chosen):
        fail("--transfer-size sizes the bandwidth measurement, which does not run: add --full or --only bandwidth")
    python = o.python
    if any(p.where != probes.HERE for p in chosen):
        python = _target_python(python, o.timeout)
    return _collect_with_progress(chosen, python or sys.executable, o.timeout, o.transfer_size, registry)


# the options check and bench share
_SHARED = [
    click.option(
        "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Report format."
    ),
    click.option("--json", "as_json", is_flag=True, help="Same as --format json."),
    click.option("--output", "-o", type=str, metavar="FILE", help="Also write the JSON report to FILE (any --format)."),
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

# check's own: which probes, a saved report, and the settings of config.KEYS (the gate, select, ignore)
_CHECK = [
    click.option(
        "--from", "from_file", type=str, metavar="REPORT.json", help="Re-run the rules on a saved JSON report."
    ),
    click.option("--full", is_flag=True, help="Also measure: copy bandwidth per GPU and a training smoke test."),
    click.option(
        "--only",
        type=str,
        metavar="PROBES",
        shell_complete=complete_probe_names,
        help=f"Run only these probes: {probes.help_text()}.",
    ),
    click.option(
        "--skip",
        type=str,
        metavar="PROBES",
        shell_complete=complete_probe_names,
        help="Skip these probes (comma-separated).",
    ),
    click.option(
        "--config",
        "config_file",
        type=str,
        metavar="FILE",
        help="Requirements file (default: cudadoctor.toml, or [tool.cudadoctor] in pyproject.toml).",
    ),
    *config.gate_options(),
    click.option("--junit", type=str, metavar="FILE", help="Also write a JUnit XML report to FILE."),
]


@click.command()
@apply(*_SHARED, *_CHECK)
def check(**options: Any) -> None:
    """Diagnose this machine: driver, CUDA, toolkit, torch, devices; every problem with its fix.

    With requirements (options or config) it is a CI health gate: an unmet requirement is a finding,
    and the exit code says whether the machine passes.
    """
    run_command(run_check, CheckOptions.from_click(options), registry=_registry())


def _registry() -> Sequence[probes.Probe]:
    """The probes to use: the registry, or the ones a caller injected through click's context object
    (`cli.main(obj={"probes": [...]})`, as the tests do)."""
    obj = click.get_current_context().obj
    return obj.get("probes", probes.REGISTRY) if isinstance(obj, dict) else probes.REGISTRY


@click.command()
@apply(*_SHARED)
def bench(**options: Any) -> None:
    """`check --full`: every check, plus copy bandwidth per GPU and the training smoke test, so it
    reaches the same verdict as check."""
    run_command(run_check, CheckOptions.from_click(options, full=True, command="bench"), registry=_registry())
