"""The terminal report: verdict first, then each section's findings with why and the fix.

rich drops colour when stdout is not a terminal or NO_COLOR is set, so piped output is plain text.
Lines wrap to the terminal (80 columns when unknown) with a hanging indent; widths are display widths
(CJK characters take two columns); marks fall back to ASCII where the output encoding lacks them.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from rich.console import Console
from rich.text import Text

from cudadoctor.locale import _
from cudadoctor.model import Finding, Severity
from cudadoctor.render import fix_heading
from cudadoctor.render.layout import display_width, fit_table, wrap
from cudadoctor.render.printable import printable
from cudadoctor.report import Report, Status

MARKS = {
    Severity.ERROR: ("✗", "x", "bold red"),
    Severity.WARNING: ("!", "!", "bold yellow"),
    Severity.INFO: ("i", "i", "cyan"),
    Severity.OK: ("✓", "+", "green"),
}
DEFAULT_WIDTH = 80


def can_encode(text: str, stream: IO[str] | None = None) -> bool:
    encoding = getattr(stream or sys.stdout, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


# the doctor's own typography, in plain ASCII where the encoding lacks it (else each would be "?")
_FALLBACK = str.maketrans({"—": "-", "–": "-", "…": "...", "‘": "'", "’": "'", "“": '"', "”": '"', "→": "->"})


def fit(text: str, stream: IO[str] | None = None) -> str:
    """`text` with what the stream's encoding lacks replaced: dashes and ellipses by ASCII, the rest by "?"
    (a GBK console keeps its Chinese)."""
    encoding = getattr(stream or sys.stdout, "encoding", None) or "ascii"
    try:
        text = "".join(ch if can_encode(ch, stream) else ch.translate(_FALLBACK) for ch in text)
        return text.encode(encoding, errors="replace").decode(encoding)
    except LookupError:
        return text.encode("ascii", errors="replace").decode("ascii")


def make_console(file: IO[str] | None = None) -> Console:
    return Console(file=file, highlight=False, soft_wrap=True, emoji=False)


def _width(console: Console) -> int:
    if console.is_terminal and console.width:
        return max(60, min(console.width, 110))
    return DEFAULT_WIDTH


def _header(report: Report, redact: bool) -> str:
    s = getattr(report.facts, "system", None)
    where: list[str] = []
    if s is not None:
        host = "<host>" if redact and s.hostname else s.hostname
        os_name = s.os_release or (s.os if s.os != "unknown" else "")  # a paste that never named the OS
        where = [x for x in (host, os_name, f"Python {s.python_version}" if s.python_version else "") if x]
    return f"cudadoctor {report.version}" + (f" — {', '.join(where)}" if where else "")


class _Writer:
    def __init__(self, console: Console, width: int, ascii_only: bool, scrub: Any) -> None:
        self.console, self.width, self.ascii_only, self.scrub = console, width, ascii_only, scrub

    def line(self, text: str, style: str | None = None, command: bool = False) -> None:
        text = printable(self.scrub(text, command))  # facts may come from a replayed report or the environment
        if self.ascii_only and not can_encode(text, self.console.file):
            text = fit(text, self.console.file)
        self.console.print(Text(text, style=style or ""))

    def para(self, text: str, indent: int, style: str | None = None, hang: int = 0) -> None:
        for ln in wrap(printable(self.scrub(text, False), newlines=True), self.width - indent, hang):
            self.line(" " * indent + ln, style)


def _left_out(w: _Writer, columns: list[tuple[str, str | None]]) -> None:
    """What the columns a table left out at this width held: the one value of every row, or their names."""
    same = [f"{name} {value}" for name, value in columns if value not in (None, "", "?")]
    differ = [name for name, value in columns if value is None]
    if same:
        w.para(_("In every row: {values}").format(values=", ".join(same)), 8, "dim")
    if differ:
        w.para(_("Not shown at this width: {columns}").format(columns=", ".join(differ)), 8, "dim")


def _finding(w: _Writer, f: Finding) -> None:
    glyph, ascii_glyph, style = MARKS[f.severity]
    mark = ascii_glyph if w.ascii_only else glyph
    head = f"{mark} {f.code} "
    lines = wrap(printable(w.scrub(f.title, False)), w.width - 2 - display_width(head), hang=0)
    title = lines[0] if lines else ""
    if w.ascii_only and not can_encode(title, w.console.file):
        title = fit(title, w.console.file)
    first = Text("  ")
    first.append(head, style=style)
    first.append(title)
    w.console.print(first)
    for ln in lines[1:]:
        w.line(" " * (2 + display_width(head)) + ln)
    for table in f.tables:
        # cut cells end in "..." where "…" cannot be written: three columns, so the layout counts them
        ellipsis = "…" if not w.ascii_only or can_encode("…", w.console.file) else "..."
        lines, left_out = fit_table(table, w.width - 8, ellipsis)
        for ln in lines:
            w.line("        " + ln)
        _left_out(w, left_out)
    if f.severity is Severity.OK:
        return
    if f.cause:
        w.line("      " + _("Follows from {code}: fix that first.").format(code=f.cause), "bold")
    if f.why:
        w.para(f.why, 6, "dim")
    for rem in f.fix:
        w.para(fix_heading(rem.when, rem.lang, bool(rem.commands)), 6, "bold", hang=2)
        for cmd in rem.commands:
            w.line(f"          {cmd}", command=True)  # commands are never wrapped: they must paste as they are


def render(report: Report, console: Console, verbose: bool = False, redact: bool = False) -> None:
    from cudadoctor.render.redact import scrubber
    from cudadoctor.rules.catalogue import SECTIONS

    ascii_only = not can_encode("✓✗—…", console.file)
    w = _Writer(console, _width(console), ascii_only, scrubber(report, redact))
    w.para(printable(_header(report, redact)), 0, "bold", hang=2)  # one line of facts; a long host name wraps
    if report.source is not None:
        src = report.source
        host = _("host {host}").format(host=printable(src.host)) if src.host else ""
        made = ", ".join(x for x in (host, printable(src.created or "")) if x)
        w.para(
            _("Replay of {path}").format(path=printable(src.path))
            + (_(" ({details})").format(details=made) if made else "")
            + _(": the rules of this cudadoctor on facts saved then, not this machine now"),
            0,
            "bold",
        )
    w.line("")
    w.para(printable(report.verdict), 0, MARKS[report.status.severity][2], hang=2)
    for section in SECTIONS:
        found = [f for f in report.findings if f.section == section]
        if not found:
            continue
        w.line("")
        w.line(_(section), "bold underline")
        for f in found:
            _finding(w, f)
    if verbose:
        w.line("")
        w.line(_("Probes"), "bold underline")
        for o in report.probes:
            w.line(f"  {o.name:<12} {o.status:<8} {o.seconds:.3f} s  {o.error or ''}".rstrip())
            if o.traceback:
                for ln in o.traceback.rstrip().splitlines():
                    w.line("      " + ln, "dim")
    w.line("")
    tail = _("Explain a code: cudadoctor explain CODE    Exit code: {code}").format(code=report.exit_code)
    w.line(tail + ("" if report.status is not Status.INCOMPLETE else _(" (incomplete)")), "dim")
