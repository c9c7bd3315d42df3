"""A Markdown report to paste into a bug report. Secrets in the environment are always masked
(at collection); --redact also replaces host and user names and UUIDs."""

from __future__ import annotations

import json

from cudadoctor.locale import _
from cudadoctor.model import language
from cudadoctor.render import fix_heading
from cudadoctor.render.layout import column_name
from cudadoctor.rules.catalogue import SECTIONS

_ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️", "ok": "✅"}


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(table: dict) -> list[str]:
    cols = [column_name(c) for c in table["columns"]]
    align = ["---:" if c.endswith(">") else "---" for c in table["columns"]]
    rows = [f"  | {' | '.join(_cell(x) for x in row)} |" for row in table["rows"]]
    return [f"  | {' | '.join(cols)} |", f"  |{'|'.join(align)}|", *rows]


def render(data: dict) -> str:
    """Markdown from report data (render.redact.report_data, redacted or not)."""
    lines = [
        f"## cudadoctor {data['version']} report",
        "",
        _("**Verdict:** {verdict}").format(verdict=data["verdict"]),
        *(
            [
                "",
                f"_Replay of a report saved {data['source'].get('created') or ''} on "
                f"{data['source'].get('host') or 'another machine'}_",
            ]
            if data.get("source")
            else []
        ),
        "",
        f"Exit code {data['exit_code']} · schema {data['schema_version']} · {data['created']}",
        "",
    ]
    system = data["facts"].get("system") if isinstance(data["facts"], dict) else None
    if system:
        # only what is known: a triaged paste often names no OS, Python or host, and a reply a maintainer
        # posts should not list "unknown" three times
        os_name = system.get("os_release") or (system.get("os") if system.get("os") != "unknown" else None)
        rows = [
            ("OS", " ".join(x for x in (os_name, f"({system['machine']})" if system.get("machine") else None) if x)),
            (
                "Python",
                " ".join(
                    x
                    for x in (
                        system.get("python_version"),
                        f"`{system['python_executable']}`" if system.get("python_executable") else None,
                    )
                    if x
                ),
            ),
            ("Host", system.get("hostname") or ""),
        ]
        known = [f"| {k} | {v} |" for k, v in rows if v]
        if known:
            lines += ["| | |", "|---|---|", *known, ""]
    for section in SECTIONS:
        found = [f for f in data["findings"] if f["section"] == section]
        if not found:
            continue
        lines += [f"### {_(section)}", ""]
        for f in found:
            lines.append(f"- {_ICON[f['severity']]} **{f['code']}** {f['title']}")
            for table in f.get("tables") or []:
                lines += ["", *_table(table), ""]
            if f["severity"] != "ok" and f["why"]:
                # a page followed by this machine's facts on a line of their own stays in its list item
                lines.append("  - " + "\n    ".join(f["why"].splitlines()))
            for rem in f["fix"]:
                lang = rem.get("lang") or language(rem["commands"])  # a report saved before fixes said
                lines.append("  - " + fix_heading(rem["when"], lang, bool(rem.get("commands"))))
                if rem.get("commands"):  # a fix that only says what is unknown has no block to paste
                    lines += ["", f"    ```{lang}", *[f"    {c}" for c in rem["commands"]], "    ```", ""]
        lines.append("")
    lines += [
        "<details><summary>Facts (JSON)</summary>",
        "",
        "```json",
        json.dumps(data["facts"], indent=2),
        "```",
        "",
        "</details>",
        "",
    ]
    return "\n".join(lines)
