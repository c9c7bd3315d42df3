"""GitHub Actions workflow commands (::error / ::warning) for findings, when GITHUB_ACTIONS=true."""

from __future__ import annotations

from cudadoctor.report import Report, Severity


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotations(report: Report) -> list[str]:
    lines = []
    for f in report.findings:
        if f.severity not in (Severity.ERROR, Severity.WARNING):
            continue
        fixes = " | ".join("; ".join(r.commands) for r in f.fix if r.commands)
        body = f"{f.title}" + (f"\nFix: {fixes}" if fixes else "")
        lines.append(f"::{f.severity.value} title={_prop(f'cudadoctor {f.code}')}::{_data(body)}")
    return lines
