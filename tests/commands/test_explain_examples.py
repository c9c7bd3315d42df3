"""`cudadoctor explain CODE` prints fixes: the catalogue's own, or the ones the rules give on the example
machines, checkpoints and torchrun jobs of rules/examples/ (not "run cudadoctor check")."""

from __future__ import annotations

import re

from click.testing import CliRunner

from cudadoctor.cli import cli
from cudadoctor.commands.explain import page
from cudadoctor.rules import CATALOGUE
from cudadoctor.rules.examples import _all, _Examples, example_fixes

# what a page says when it has no fix to show
FALLBACK = "The report gives the commands that fit the machine"
# codes whose page shows a fix (26 before the examples grew); raise it with the examples, never lower it
FLOOR = 150
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


def test_a_code_explains_the_same_whatever_was_explained_before():
    everything = _all()
    lazy = _Examples()
    for code in reversed(list(CATALOGUE)):
        lazy.find(code)
        assert lazy.fixes.get(code) == everything.get(code), code


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
