"""`cudadoctor explain CODE`: a finding's page from the catalogue, with its usual fixes."""

from __future__ import annotations

import textwrap

import click

from cudadoctor.cli import echo, fail


def page(code: str, width: int = 80) -> str | None:
    from cudadoctor.rules import CATALOGUE

    e = CATALOGUE.get(code.strip().upper())
    if e is None:
        return None
    lines = [f"{e.code} {e.name} ({e.severity.value}, section {e.section})", "", *textwrap.wrap(e.summary, width), ""]
    lines += textwrap.wrap(e.explanation, width)
    fixes = list(e.fixes) or _example_fixes(e.code)
    for f in fixes:
        lines += ["", *textwrap.wrap(f"Fix — {f.when}:", width, subsequent_indent="  ")]
        lines += [f"    {c}" for c in f.commands]
    if not fixes:
        lines += ["", "The report gives the commands that fit the machine: cudadoctor check"]
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
        fail(f"unknown finding code {code!r}; `cudadoctor explain` knows CD001-CD999 (see docs/findings.md)")
    echo(text)
