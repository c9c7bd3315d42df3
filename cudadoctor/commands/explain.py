"""`cudadoctor explain CODE`: a finding's page from the catalogue, with the fixes the rules give on the
code's own example (rules/examples/table.py names it), else the catalogue's usual ones."""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem

from cudadoctor.commands.output import echo, fail
from cudadoctor.locale import _
from cudadoctor.render.layout import cut, display_width, pad, wrap
from cudadoctor.render.localize import label


def page(code: str, width: int = 80) -> str | None:
    from cudadoctor.rules import CATALOGUE

    e = CATALOGUE.get(code.strip().upper())
    if e is None:
        return None
    head = _("{code} {name} ({severity}, section {section})").format(
        code=e.code, name=e.name, severity=_(e.severity.value), section=_(e.section)
    )
    lines = [head, "", *wrap(_(e.summary), width), ""]
    lines += wrap(_(e.explanation), width)
    fixes = _example_fixes(e.code) or list(e.fixes)
    for f in fixes:
        lines += ["", *wrap(_("Fix — {when}:").format(when=label(f.when)), width, hang=2)]
        lines += [f"    {c}" for c in f.commands]
    if not fixes:
        lines += ["", _("The report gives the commands that fit the machine: cudadoctor check")]
    return "\n".join(lines)


def _example_fixes(code: str) -> list:
    """The fixes the rules give on the code's own example (only that example is evaluated: start-up time)."""
    from cudadoctor.rules.examples import example_fixes

    return example_fixes(code)


def listing(width: int = 80) -> str:
    """Every code, its severity and its one-line summary, one line each, cut to `width` columns."""
    from cudadoctor.rules import CATALOGUE

    entries = sorted(CATALOGUE.values(), key=lambda e: e.code)
    severities = {e.severity: _(e.severity.value) for e in entries}
    column = max(display_width(s) for s in severities.values())
    return "\n".join(cut(f"{e.code}  {pad(severities[e.severity], column)}  {_(e.summary)}", width) for e in entries)


def complete_code(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """`explain CD1<TAB>`: the codes that start so (any case), each with its summary for zsh and fish."""
    from cudadoctor.rules import CATALOGUE

    start = incomplete.strip().upper()
    return [CompletionItem(c, help=_(e.summary)) for c, e in sorted(CATALOGUE.items()) if c.startswith(start)]


@click.command()
@click.argument("code", required=False, shell_complete=complete_code)
@click.option("--list", "show_list", is_flag=True, help="List every code with its severity and summary.")
def explain(code: str | None, show_list: bool) -> None:
    """Print the page of a finding code (e.g. CD101), with its fixes; --list lists every code."""
    if show_list:
        if code is not None:
            fail(_("give a code or --list, not both"))
        echo(listing())
        return
    if code is None:
        fail(_("which code? cudadoctor explain CD101, or cudadoctor explain --list"))
    text = page(code)
    if text is None:
        message = _("unknown finding code {code}; docs/findings.md lists every code")
        fail(message.format(code=repr(code[:20]) + ("…" if len(code) > 20 else "")))  # not 100,000 characters back
    echo(text)
