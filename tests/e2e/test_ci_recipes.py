"""Every `cudadoctor check` command line in docs/ci.md runs: it parses, and exits 0 or 1."""

from __future__ import annotations

import re
import shlex

import pytest

from cudadoctor.report import EXIT_OK, EXIT_PROBLEMS
from tests.conftest import H100_HEALTHY, ROOT


def recipe_commands() -> list[str]:
    text = (ROOT / "docs" / "ci.md").read_text()
    blocks = re.findall(r"```(?:sh|yaml)\n(.*?)```", text, re.S)
    found = []
    for block in blocks:
        for line in block.splitlines():
            m = re.search(r"(cudadoctor check[^\"'\n]*)", line)
            if m:
                found.append(m.group(1).strip())
    return found


def test_the_recipes_are_found():
    assert len(recipe_commands()) == 4  # GitHub Actions, GitLab CI, Slurm, Kubernetes


@pytest.mark.parametrize("command", recipe_commands())
def test_recipe_command_runs(run_cli, tmp_path, command):
    argv = shlex.split(command)[1:]  # drop "cudadoctor"; run_cli runs python -m cudadoctor
    outputs = []
    for option in ("--junit", "--output"):
        if option in argv:
            i = argv.index(option) + 1
            argv[i] = str(tmp_path / f"artifact{option.replace('-', '_')}")  # /var/log/… is not ours to write
            outputs.append(argv[i])
    r = run_cli(*argv, machine=H100_HEALTHY)
    assert r.code in (EXIT_OK, EXIT_PROBLEMS), r.stderr
    assert "Usage:" not in r.stderr
    for path in outputs:
        assert (tmp_path / path).exists()
