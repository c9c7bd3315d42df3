"""The report as one self-contained HTML fragment, for notebooks (`Report._repr_html_`).

Every string from outside is escaped; styles are inline (a notebook strips <style> blocks in some
front-ends, and nothing may load from the network); colours are chosen to read on a light and a dark
theme alike: text keeps the theme's own colour, and only badges and borders carry a hue."""

from __future__ import annotations

import html
from typing import Any

from cudadoctor.model import language
from cudadoctor.render import fix_heading
from cudadoctor.render.layout import column_name

# severity -> (badge background, label); white text on these hues reads on any theme
_BADGE = {
    "error": ("#c62828", "error"),
    "warning": ("#b26a00", "warning"),
    "info": ("#1565c0", "info"),
    "ok": ("#2e7d32", "ok"),
}
_STATUS = {"healthy": "#2e7d32", "warnings": "#b26a00", "problems": "#c62828", "incomplete": "#6a1b9a"}

_BOX = "font-family:system-ui,sans-serif;line-height:1.4;color:inherit;max-width:60em"
_CODE = (
    "display:block;white-space:pre-wrap;word-break:break-all;margin:2px 0 6px 0;padding:4px 8px;"
    "border-radius:4px;background:rgba(127,127,127,0.15);color:inherit;font-family:ui-monospace,monospace"
)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _badge(severity: str) -> str:
    colour, label = _BADGE.get(severity, ("#555555", severity))
    return (
        f'<span style="background:{colour};color:#fff;border-radius:3px;padding:0 5px;'
        f'font-size:0.85em;font-weight:600">{_e(label)}</span>'
    )


def _table(table: dict[str, Any]) -> str:
    # a column name ending in ">" is right-aligned (numbers), as every renderer reads it
    columns = [str(c) for c in table.get("columns") or []]
    align = ["right" if ">" in c[len(column_name(c)) :] else "left" for c in columns]
    cells = zip(columns, align, strict=True)
    head = "".join(f'<th style="text-align:{a};padding:1px 8px">{_e(column_name(c))}</th>' for c, a in cells)
    rows = "".join(
        "<tr>"
        + "".join(
            f'<td style="text-align:{align[i] if i < len(align) else "left"};padding:1px 8px">{_e(c)}</td>'
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in table.get("rows") or []
    )
    return f'<table style="border-collapse:collapse;font-size:0.9em;margin:4px 0"><tr>{head}</tr>{rows}</table>'


def _finding(f: dict[str, Any]) -> str:
    parts = [
        f'<div style="border-left:4px solid {_BADGE.get(f.get("severity", ""), ("#555555",))[0]};'
        f'padding:2px 10px;margin:8px 0">',
        f"<div>{_badge(f.get('severity', ''))} <code>{_e(f.get('code', ''))}</code> "
        f"<b>{_e(f.get('title', ''))}</b></div>",
    ]
    if f.get("why"):
        parts.append(f'<div style="margin:2px 0;opacity:0.9">{_e(f["why"])}</div>')
    for t in f.get("tables") or []:
        parts.append(_table(t))
    for fix in f.get("fix") or []:
        commands = fix.get("commands") or []
        if fix.get("when"):  # the heading every renderer gives: the language named, no colon without commands
            heading = fix_heading(fix["when"], fix.get("lang") or language(commands), bool(commands))
            parts.append(f'<div style="margin-top:4px">{_e(heading)}</div>')
        if commands:
            parts.append(f'<code style="{_CODE}">{_e(chr(10).join(commands))}</code>')
    parts.append("</div>")
    return "".join(parts)


def render(data: dict[str, Any]) -> str:
    """One <div>: the verdict, then every finding (most severe first, as the text report orders them)."""
    status = str(data.get("status") or "")
    colour = _STATUS.get(status, "#555555")
    head = (
        f'<div style="border:2px solid {colour};border-radius:6px;padding:6px 10px;margin-bottom:6px">'
        f"<b>{_e(data.get('verdict') or status.upper())}</b>"
        f'<div style="font-size:0.85em;opacity:0.8">cudadoctor {_e(data.get("version", ""))} &middot; '
        f"{_e(data.get('command', ''))} &middot; exit code {_e(data.get('exit_code', ''))}</div></div>"
    )
    rank = {"error": 0, "warning": 1, "info": 2, "ok": 3}
    findings = sorted(data.get("findings") or [], key=lambda f: rank.get(f.get("severity"), 4))
    body = "".join(_finding(f) for f in findings)
    return f'<div class="cudadoctor-report" style="{_BOX}">{head}{body}</div>'
