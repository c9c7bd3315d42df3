"""docs/findings.md, generated from the rules' catalogue: `python -m cudadoctor.render.catalogue`."""

from __future__ import annotations

import sys
from pathlib import Path

from cudadoctor.rules import CATALOGUE
from cudadoctor.rules.catalogue import SECTIONS

HEADER = """\
# Findings catalogue

Generated from the rules by `python -m cudadoctor.render.catalogue > docs/findings.md`; a test fails
when this file is stale. Every finding has a stable code and name: scripts and CI may depend on them.
`cudadoctor explain CODE` prints one page. The severity shown is the usual one; a few rules raise or
lower it for a particular machine, and the report always shows the severity it used.
"""


def render() -> str:
    lines = [HEADER]
    for section in SECTIONS:
        entries = sorted((e for e in CATALOGUE.values() if e.section == section), key=lambda e: e.code)
        if not entries:
            continue
        lines += [f"## {section}", "", "| Code | Name | Severity | Summary |", "|---|---|---|---|"]
        lines += [f"| [{e.code}](#{e.code.lower()}) | {e.name} | {e.severity.value} | {e.summary} |" for e in entries]
        lines.append("")
        for e in entries:
            lines += [
                f"### {e.code}",
                "",
                f"**{e.name}** — {e.severity.value}. {e.summary}",
                "",
                e.explanation,
                "",
            ]
    return "\n".join(lines)


def main() -> None:
    text = render()
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
