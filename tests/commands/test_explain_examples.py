"""`cudadoctor explain CODE` prints fixes: the ones the rules give on the code's own example (the first
rules/examples/table.py names for it), else the catalogue's own (not "run cudadoctor check")."""

from __future__ import annotations

import re

from click.testing import CliRunner

from cudadoctor.cli import cli
from cudadoctor.commands.explain import page
from cudadoctor.rules import CATALOGUE
from cudadoctor.rules.examples import _evaluated, example_fixes, examples, own_example

# what a page says when it has no fix to show
FALLBACK = "The report gives the commands that fit the machine"
# codes whose page shows a fix (26 before the examples grew, 157 once every code had its own); never lower it
FLOOR = 157
# a placeholder to fill in by hand: <uuid>, <your-image>
PLACEHOLDER = re.compile(r"<[^<>\s][^<>]*>")


def _shows_a_fix(code: str) -> bool:
    text = page(code) or ""
    return "Fix —" in text and FALLBACK not in text


def test_most_codes_explain_with_a_fix():
    without = [code for code in CATALOGUE if not _shows_a_fix(code)]
    shown = len(CATALOGUE) - len(without)
    assert shown >= FLOOR, f"{shown} of {len(CATALOGUE)} pages show a fix; without one: {' '.join(without)}"


def test_example_fixes_are_commands_to_paste():
    for code, entry in CATALOGUE.items():
        for f in example_fixes(code):
            assert f.when.strip(), code
            for cmd in f.commands:
                assert cmd.strip() and not cmd.lstrip().startswith("#"), (code, cmd)
                for hole in PLACEHOLDER.findall(cmd):
                    # a placeholder only where the catalogue's own text already has it
                    assert hole in entry.summary + entry.explanation, (code, cmd)


def test_explain_cd502_prints_its_fix():
    r = CliRunner().invoke(cli, ["explain", "CD502"])
    assert r.exit_code == 0 and FALLBACK not in r.output and "Fix —" in r.output
    commands = [c for f in example_fixes("CD502") for c in f.commands]
    assert commands and all(c in r.output for c in commands)
    # the rule's own advice, not the fallback: see who holds the memory, or pick GPUs that have it
    assert all(c.startswith(("cudadoctor gpus", 'eval "$(cudadoctor gpus')) for c in commands)


def test_explain_shows_its_own_examples_fixes_and_evaluates_only_that_example():
    """CD130 (a toolkit but no driver): its own example is a fresh VM, not the first machine that raises it."""
    _evaluated.cache_clear()
    r = CliRunner().invoke(cli, ["explain", "CD130"])
    own = own_example("CD130")
    assert own is not None and own.name == "toolkit-without-driver"
    fixes = next(f.fix for f in own.findings() if f.code == "CD130")
    assert r.exit_code == 0 and all(c in r.output for x in fixes for c in x.commands)
    assert _evaluated.cache_info().currsize == 1  # one example evaluated, not every one before it
    # the same page whatever was explained before
    assert page("CD130") == page("CD130") and len(examples()) > 100


def test_an_unknown_code_is_one_short_line() -> None:
    """Not 100,000 characters echoed back, and no claim to know CD999."""
    from click.testing import CliRunner

    from cudadoctor.cli import cli

    r = CliRunner().invoke(cli, ["explain", "X" * 100_000])
    assert r.exit_code == 2 and len(r.output) < 200 and "docs/findings.md lists every code" in r.output
    r = CliRunner().invoke(cli, ["explain", "CD999"])
    assert r.exit_code == 2 and "unknown finding code 'CD999'" in r.output and "CD001-CD999" not in r.output


def test_a_usage_error_is_one_line_without_tabs() -> None:
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "cudadoctor", "completion"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "\t" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Choose from: bash, zsh, fish" in r.stderr
