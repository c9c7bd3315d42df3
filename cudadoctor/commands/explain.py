"""`cudadoctor explain CODE`: a finding's page from the catalogue, with its usual fixes."""

from __future__ import annotations

import click

from cudadoctor.cli import echo, fail
from cudadoctor.locale import _
from cudadoctor.locale.localize import label
from cudadoctor.render.layout import wrap


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
    fixes = list(e.fixes) or _example_fixes(e.code)
    for f in fixes:
        lines += ["", *wrap(_("Fix — {when}:").format(when=label(f.when)), width, hang=2)]
        lines += [f"    {c}" for c in f.commands]
    if not fixes:
        lines += ["", _("The report gives the commands that fit the machine: cudadoctor check")]
    return "\n".join(lines)


def _example_fixes(code: str) -> list:
    """Fixes the rules give on the machines the catalogue keeps as examples (rules.examples)."""
    from cudadoctor.rules.examples import example_fixes

    return example_fixes(code)


@click.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the page of a finding code (e.g. CD101), with its fixes."""
    text = page(code)
    if text is None:
        message = _("unknown finding code {code}; docs/findings.md lists every code")
        fail(message.format(code=repr(code[:20]) + ("…" if len(code) > 20 else "")))  # not 100,000 characters back
    echo(text)
