"""GitHub Actions workflow commands (::error / ::warning) for findings, when GITHUB_ACTIONS=true."""

from __future__ import annotations

from cudadoctor.model import Finding, Severity
from cudadoctor.render import fix_heading
from cudadoctor.report import Report


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotations(report: Report) -> list[str]:
    lines = []
    for f in report.findings:
        if f.severity not in (Severity.ERROR, Severity.WARNING):
            continue
        body = "\n".join([f.title, *_fix_lines(f)])
        lines.append(f"::{f.severity.value} title={_prop(f'cudadoctor {f.code}')}::{_data(body)}")
    return lines


def _fix_lines(f: Finding) -> list[str]:
    """Each way to fix it under its own label, one command a line, as the text report shows them: joined on
    one line, alternatives read as a pipe (`reset | reboot`) and steps as one command."""
    out = []
    for rem in f.fix:
        if rem.commands:
            out += [fix_heading(rem.when, rem.lang, bool(rem.commands)), *(f"    {c}" for c in rem.commands)]
    return out
