"""docs/findings.md, generated from the rules' catalogue: `python -m tools.catalogue docs/findings.md`
(build time only: nothing in the package imports it)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from cudadoctor.rules import CATALOGUE
from cudadoctor.rules.catalogue import SECTIONS

HEADER = """\
# Findings catalogue

Generated from the rules by `python -m tools.catalogue docs/findings.md`; a test fails
when this file is stale. Every finding has a stable code and name: scripts and CI may depend on them.
`cudadoctor explain CODE` prints one page. The severity shown is the usual one; a few rules raise or
lower it for a particular machine, and the report always shows the severity it used.
"""


def render(
    header: str = HEADER,
    tr: Callable[[str], str] = str,
    columns: tuple[str, ...] = ("Code", "Name", "Severity", "Summary"),
    stop: str = ". ",
) -> str:
    """The catalogue page; `tr` translates its texts (docs/zh_CN/findings.md: tools/findings_doc.py)."""
    lines = [header]
    for section in SECTIONS:
        entries = sorted((e for e in CATALOGUE.values() if e.section == section), key=lambda e: e.code)
        if not entries:
            continue
        lines += [f"## {tr(section)}", "", f"| {' | '.join(columns)} |", "|---|---|---|---|"]
        lines += [
            f"| [{e.code}](#{e.code.lower()}) | {e.name} | {tr(e.severity.value)} | {tr(e.summary)} |" for e in entries
        ]
        lines.append("")
        for e in entries:
            lines += [f"### {e.code}", "", f"**{e.name}** — {tr(e.severity.value)}{stop}{tr(e.summary)}", ""]
            lines += [tr(e.explanation), ""]
            for f in e.fixes:
                lines += [tr("Fix — {when}:").format(when=tr(f.when)), "", f"```{f.lang}", *f.commands, "```", ""]
    return "\n".join(lines)


def write(text: str, argv: list[str]) -> None:
    """A generated page to the path given on the command line, or to stdout."""
    if len(argv) > 1:
        Path(argv[1]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def main() -> None:
    write(render(), sys.argv)


if __name__ == "__main__":
    main()
