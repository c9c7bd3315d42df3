"""The terminal report: verdict first, then each section's findings with why and the fix.

rich drops colour when stdout is not a terminal or NO_COLOR is set, so piped output is plain text.
"""

from __future__ import annotations

import textwrap
from typing import IO

from rich.console import Console
from rich.text import Text

from cudadoctor import exitcodes
from cudadoctor.model import Finding, Severity
from cudadoctor.report import Report
from cudadoctor.rules.catalogue import SECTIONS

MARKS = {
    Severity.ERROR: ("✗", "bold red"),
    Severity.WARNING: ("!", "bold yellow"),
    Severity.INFO: ("i", "cyan"),
    Severity.OK: ("✓", "green"),
}


def make_console(file: IO[str] | None = None) -> Console:
    return Console(file=file, highlight=False, soft_wrap=True, emoji=False)


def _header(report: Report) -> str:
    s = report.facts.system
    where = []
    if s is not None:
        where = [x for x in (s.hostname, s.os_release or s.os, f"Python {s.python_version}") if x]
    return f"cudadoctor {report.version}" + (f" — {', '.join(where)}" if where else "")


def _finding(console: Console, f: Finding, width: int) -> None:
    mark, style = MARKS[f.severity]
    line = Text("  ")
    line.append(f"{mark} {f.code}", style=style)
    line.append(f" {f.title}")
    console.print(line)
    for detail in f.details:
        console.print(Text("        " + detail))
    if f.severity is Severity.OK:
        return
    if f.why:
        for ln in textwrap.wrap(f.why, width=max(40, width - 6)):
            console.print(Text("      " + ln, style="dim"))
    for rem in f.fix:
        console.print(Text(f"      Fix — {rem.when}:", style="bold"))
        for cmd in rem.commands:
            console.print(Text(f"          {cmd}"))


def render(report: Report, console: Console, verbose: bool = False) -> None:
    width = min(console.width or 100, 110)
    console.print(Text(_header(report), style="bold"))
    console.print()
    worst = max((f.severity for f in report.findings), key=lambda s: s.rank, default=Severity.OK)
    if report.exit_code == exitcodes.INCOMPLETE and worst is not Severity.ERROR:
        worst = Severity.WARNING  # an incomplete report is never shown as healthy
    _, style = MARKS[worst]
    console.print(Text(report.verdict, style=style))
    for section in SECTIONS:
        found = [f for f in report.findings if f.section == section]
        if not found:
            continue
        console.print()
        console.print(Text(section, style="bold underline"))
        for f in found:
            _finding(console, f, width)
    if verbose:
        console.print()
        console.print(Text("Probes", style="bold underline"))
        for o in report.probes:
            console.print(Text(f"  {o.name:<12} {o.status:<8} {o.seconds:.3f} s  {o.error or ''}".rstrip()))
            if o.traceback:
                console.print(Text(textwrap.indent(o.traceback.rstrip(), "      "), style="dim"))
    console.print()
    console.print(Text(f"Explain a code: cudadoctor explain CODE    Exit code: {report.exit_code}", style="dim"))
