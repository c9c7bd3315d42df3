"""`cudadoctor triage [FILE | -]`: a verdict from what someone pasted (collect_env, nvidia-smi, pip
lists, error messages, a cudadoctor report), for the people who help them.

The paste becomes facts (backends/paste), with everything it does not show left unknown; the same
rules as `check` run on them, and the report is headed by what was found in the paste and ends with
"To be sure, ask for:" where a deciding fact stayed unknown. The checks whose facts the paste does not
show at all are "skipped", so the verdict names its scope. Nothing here touches this machine.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from cudadoctor.commands.output import echo, fail, run_command
from cudadoctor.locale import N_, _
from cudadoctor.model import ProbeOutcome, Severity
from cudadoctor.report import EXIT_USAGE

if TYPE_CHECKING:
    from cudadoctor.backends.paste import Paste
    from cudadoctor.report import Report

FORMATS = ("text", "json", "markdown")
MAX_PASTE = 2 << 20  # an issue body is at most 65,536 characters on GitHub; logs a few hundred KB

NOTHING = N_(
    "nothing to diagnose in this text: it has no collect_env, nvidia-smi, pip list or CUDA/torch "
    "error that cudadoctor knows. Ask for the output of `python -m torch.utils.collect_env` and "
    "`nvidia-smi`, and the full error message."
)


def outcomes_for(facts: Any) -> tuple[list[ProbeOutcome], list[str]]:
    """One outcome per default check: "ok" where the paste showed its facts, "skipped" where it
    showed none, so the verdict's scope says what was not checked."""
    from cudadoctor import probes

    expected = [p.name for p in probes.REGISTRY if p.default]
    outcomes = [
        ProbeOutcome(name, "ok" if getattr(facts, name, None) is not None else "skipped", 0.0, None)
        for name in expected
    ]
    return outcomes, expected


def diagnose(paste: Paste) -> Report:
    from cudadoctor.report import build
    from cudadoctor.rules import evaluate

    outcomes, expected = outcomes_for(paste.facts)
    from cudadoctor.rules.paste import overruled

    findings = overruled(paste.facts, evaluate(paste.facts, outcomes))
    # a paste that cannot settle whether torch can use the GPU gets no verdict but "not enough to tell"
    ask = next((x for x in findings if x.code == "CD901" and x.severity is Severity.WARNING), None)
    undecided = None
    if ask is not None:
        ask.severity = Severity.INFO
        from cudadoctor.render.localize import title

        undecided = _("whether PyTorch can use the GPU. {title}").format(title=title(ask.code, ask.title))
    from cudadoctor.render.localize import findings as localized

    findings = localized(findings)  # the current language's titles, pages, fix labels, table headers
    return build("triage", paste.facts, outcomes, findings, expected=expected, undecided=undecided)


def header(paste: Paste) -> list[str]:
    """What the paste showed, in a few lines; the full table is finding CD900."""
    p = paste.facts.paste
    assert p is not None
    out = [_("Found in the paste: {formats}").format(formats=", ".join(paste.formats))]
    keys = (
        N_("torch version"),
        N_("torch built for CUDA"),
        "torch.cuda.is_available()",
        N_("NVIDIA driver"),
        N_("driver supports CUDA up to"),
        N_("OS release"),
        N_("OS"),
    )
    shown = {s.what: s.value for s in [*p.seen, *p.derived]}
    facts = [f"{_(k)} {shown[k]}" for k in keys if k in shown]
    gpus = paste.facts.driver.devices if paste.facts.driver else []
    if gpus:
        facts.append(_("GPUs: {names}").format(names=", ".join(sorted({g.name or "?" for g in gpus}))))
    if facts:
        out.append("  " + _("; ").join(facts))
    kinds = list(dict.fromkeys(h.kind for h in p.hits if h.is_error))
    if kinds:
        out.append("  " + _("errors recognised: {kinds}").format(kinds=", ".join(kinds)))
    return out


def run_triage(path: str | None, fmt: str, as_json: bool, redact: bool, verbose: bool) -> int:
    from cudadoctor.backends.files import InputError, read_text
    from cudadoctor.backends.paste import read

    source = path or "-"
    if source == "-" and sys.stdin.isatty():
        echo(_("Paste the text, then press Ctrl-D (Ctrl-Z Enter on Windows):"), err=True)
    try:
        raw = read_text(source, MAX_PASTE, "paste")
    except InputError as exc:
        message = str(exc)
        fail("stdin" + message[1:] if source == "-" and message.startswith("-") else message)
    if not raw.strip():
        fail(_(NOTHING), EXIT_USAGE)
    paste = read(raw)
    if paste.empty:
        fail(_(NOTHING), EXIT_USAGE)
    rep = diagnose(paste)
    fmt = "json" if as_json else fmt
    emit(rep, paste, fmt, redact, verbose)
    return rep.exit_code


def emit(rep: Report, paste: Paste, fmt: str, redact: bool, verbose: bool) -> None:
    import json

    from cudadoctor.render import markdown, text
    from cudadoctor.render.redact import report_data

    data = report_data(rep, redact)
    if fmt == "json":
        echo(json.dumps(data, indent=2))
        return
    if fmt == "markdown":
        # a paste seldom shows the host name or the Python: no rows that only say "unknown"
        body = [
            line
            for line in markdown.render(data).split("\n")
            if line.strip() not in ("| Host | unknown |", "| Python | unknown |")
        ]
        lead = ["", _("**Triage of the pasted output.** {found}.").format(found=header(paste)[0]), ""]
        lead += [f"- {line.strip()}" for line in header(paste)[1:]]
        echo("\n".join(body[:1] + lead + body[1:]))
        return
    import shutil
    import textwrap

    from cudadoctor.locale import ENGLISH, current
    from cudadoctor.render.layout import wrap

    width = max(40, min(shutil.get_terminal_size((80, 24)).columns, 100) - 1)
    for line in header(paste):
        indent = " " * (len(line) - len(line.lstrip()))
        if current() == ENGLISH:
            echo("\n".join(textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_on_hyphens=False)))
        else:  # by display width: Chinese text is twice as wide as it has characters
            echo("\n".join(indent + part for part in wrap(line.strip(), width - len(indent), hang=2)))
    text.render(rep, text.make_console(), verbose=verbose, redact=redact)


@click.command()
@click.argument("file", required=False, metavar="[FILE | -]")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Report format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--redact", is_flag=True, help="Replace host and user names and GPU/MIG UUIDs in the output.")
@click.option("-v", "--verbose", is_flag=True, help="Show which checks the paste covered.")
def triage(file: str | None, fmt: str, as_json: bool, redact: bool, verbose: bool) -> None:
    """Diagnose what someone pasted: collect_env, nvidia-smi, pip/conda lists, error messages.

    Reads FILE, or stdin when FILE is - or missing. Facts the paste does not show stay unknown; the
    report ends with the commands to ask for. --format markdown is a reply ready to post.
    Exit codes as for check: 0 healthy, 1 problems, 2 nothing to diagnose, 3 not enough to tell.
    """
    run_command(run_triage, file, fmt, as_json, redact, verbose)
