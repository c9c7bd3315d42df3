"""The command line: click commands that wire probes, rules and renderers together."""

from __future__ import annotations

import os
import shutil
import sys
import traceback

import click

from cudadoctor import __version__, exitcodes

# Everything else is imported inside the commands: `cudadoctor gpus` must start fast.

FORMATS = ("text", "json", "markdown")


def _fail(message: str, code: int = exitcodes.USAGE) -> None:
    click.echo(f"cudadoctor: {message}", err=True)
    sys.exit(code)


def _check_writable(path: str, option: str = "--output") -> None:
    if os.path.isdir(path):
        _fail(f"cannot write {option} {path}: it is a directory")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        _fail(f"cannot write {option} {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        _fail(f"cannot write {option} {path}: permission denied")


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        _fail(f"cannot write {path}: {exc.strerror or exc}")


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    from cudadoctor.units import parse_size

    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="cudadoctor")
def cli() -> None:
    """Why PyTorch cannot use your NVIDIA GPU, or how well it can, and what to type to fix it.

    Exit codes: 0 healthy, 1 problems found, 2 usage error, 3 the doctor could not finish,
    4 `gpus --pick` found too few GPUs (docs/exit-codes.md).
    """


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Report format on stdout.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "--output",
    "-o",
    type=str,
    metavar="FILE",
    help="Also write the JSON report to FILE; the chosen format still goes to stdout.",
)
@click.option("--redact", is_flag=True, help="Markdown/JSON: replace host and user names and UUIDs.")
@click.option(
    "--from",
    "from_file",
    type=str,
    metavar="REPORT.json",
    help="Re-run the rules on the facts of a saved JSON report instead of this machine.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.5),
    metavar="SECONDS",
    help="Time bound for every probe (default: each probe's own, 10-30 s).",
)
@click.option(
    "--python",
    "python",
    type=str,
    metavar="PATH",
    help="Diagnose the torch of another interpreter (a venv or conda env); nothing is installed into it.",
)
@click.option("--full", is_flag=True, help="Also measure: copy bandwidth per GPU and a training smoke test.")
@click.option(
    "--transfer-size",
    callback=_size,
    metavar="SIZE",
    help="Bytes per timed copy in the bandwidth measurement (default 256MiB; capped by free memory).",
)
@click.option(
    "--only",
    type=str,
    metavar="PROBES",
    help="Run only these probes (comma-separated): system, pci, driver, cuda_driver, toolkit, torch, bandwidth, smoke.",
)
@click.option("--skip", type=str, metavar="PROBES", help="Skip these probes (comma-separated).")
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
@click.option("-v", "--verbose", is_flag=True, help="Show probe timings and tracebacks.")
def check(
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
    **gate: str | bool | None,
) -> None:
    """Diagnose this machine: driver, CUDA, toolkit, torch, devices; every problem with its fix.

    With requirements (options or config) it is a CI health gate: an unmet requirement is a finding,
    and the exit code says whether the machine passes.
    """
    from cudadoctor import check_command as cc

    for option, path in (("--output", output), ("--junit", junit)):
        if path:
            _check_writable(path, option)
    try:
        req = cc.requirements(config_file, gate)
    except ValueError as exc:  # ConfigError and bad option values
        _fail(str(exc))
    if from_file:
        try:
            facts, outcomes = cc.load_saved(from_file)
        except ValueError as exc:
            _fail(str(exc))
    else:
        probes = cc.select(_names("--only", only), _names("--skip", skip), full, req)
        if any(p.name in cc.TARGET_PYTHON_PROBES for p in probes):
            python = _target_python(python)
        facts, outcomes = _collect_with_progress(cc, probes, python or sys.executable, timeout, transfer_size)
    rep = cc.diagnose(facts, outcomes, req)
    _emit(rep, "json" if as_json else fmt, output, redact, verbose)
    if junit:
        from cudadoctor.render.junit import render as junit_xml

        _write(junit, junit_xml(rep, cc.severity(req.fail_on)))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from cudadoctor.render.github import annotations

        for line in annotations(rep):
            click.echo(line, err=fmt == "json" or as_json)
    sys.exit(rep.exit_code)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--output", "-o", type=str, metavar="FILE", help="Also write the JSON report to FILE.")
@click.option("--transfer-size", callback=_size, metavar="SIZE", help="Bytes per timed copy (default 256MiB).")
@click.option("--python", "python", type=str, metavar="PATH", help="Measure with another interpreter's torch.")
@click.option("--timeout", type=click.FloatRange(min=0.5), metavar="SECONDS", help="Time bound (default 120 s).")
@click.option("-v", "--verbose", is_flag=True, help="Show probe timings and tracebacks.")
@click.pass_context
def bench(ctx: click.Context, **options: object) -> None:
    """Only the measurements: copy bandwidth per GPU and the training smoke test."""
    ctx.invoke(check, only="system,pci,driver,bandwidth,smoke", **options)


def _names(option: str, value: str | None) -> set[str]:
    from cudadoctor.probes.registry import ALL_PROBES

    known = [p.name for p in ALL_PROBES]
    names = {n.strip() for n in (value or "").split(",") if n.strip()}
    unknown = sorted(names - set(known))
    if unknown:
        raise click.BadParameter(
            f"unknown probe {', '.join(unknown)}; choose from {', '.join(known)}", param_hint=option
        )
    return names


def _collect_with_progress(cc, probes, python, timeout, transfer_size):  # type: ignore[no-untyped-def]
    """Measurements take seconds: show what runs on a terminal (stderr), never in pipes."""
    names = [p.name for p in probes if p in cc.MEASURE_PROBES]
    if not names or not sys.stderr.isatty():
        return cc.collect(probes, python, timeout, transfer_size)
    from rich.console import Console

    with Console(stderr=True).status(f"Measuring {' and '.join(names)} (torch child process)…"):
        return cc.collect(probes, python, timeout, transfer_size)


def _target_python(python: str | None) -> str:
    from cudadoctor.backends.torchenv import check_interpreter

    if python is None:
        return sys.executable
    resolved = shutil.which(python) or python
    if not os.path.exists(resolved):
        _fail(f"--python {python}: no such file")
    problem = check_interpreter(resolved)
    if problem:
        _fail(f"--python {python}: {problem}")
    return resolved


def _emit(rep, fmt: str, output: str | None, redact: bool, verbose: bool) -> None:  # type: ignore[no-untyped-def]
    import json

    from cudadoctor.render import markdown, text
    from cudadoctor.render.redact import report_data

    data = report_data(rep, redact)
    json_text = json.dumps(data, indent=2) + "\n"
    if output:
        _write(output, json_text)
    if fmt == "json":
        click.echo(json_text, nl=False)
    elif fmt == "markdown":
        click.echo(markdown.render(data))
    else:
        text.render(rep, text.make_console(), verbose=verbose)


@cli.command(context_settings={"ignore_unknown_options": True, "help_option_names": []}, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def gpus(args: tuple[str, ...]) -> None:
    """The GPUs, their free memory and who holds it; --pick N prints a ready CUDA_VISIBLE_DEVICES.

    NVML only, never torch. Options: cudadoctor gpus --help.
    """
    from cudadoctor.gpus_command import main as gpus_main

    sys.exit(gpus_main(list(args)))


@cli.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the page of a finding code (e.g. CD101)."""
    from cudadoctor.rules import CATALOGUE

    e = CATALOGUE.get(code.upper())
    if e is None:
        _fail(f"unknown finding code {code!r}; see docs/findings.md for the list")
    click.echo(f"{e.code} {e.name} ({e.severity.value}, section {e.section})\n")
    click.echo(f"{e.summary}\n")
    import textwrap

    click.echo(textwrap.fill(e.explanation, width=88))


def main() -> None:
    verbose = "-v" in sys.argv or "--verbose" in sys.argv
    try:
        cli(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # the last line of defence: no traceback unless asked for
        if verbose:
            traceback.print_exc()
        click.echo(f"cudadoctor: internal error: {type(exc).__name__}: {exc} (run with -v for details)", err=True)
        sys.exit(exitcodes.INCOMPLETE)
