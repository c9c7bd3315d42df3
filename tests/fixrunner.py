"""Run every fix a report prints, as a user pastes it, and say which ones fail.

A fix is one of three kinds, told apart by what it is:
- a `cudadoctor …` command: run through the real CLI (the `run_cli` fixture); it must exit 0, or 0/1 for
  the commands whose job is to report (`inspect`, `check`); what a `ckpt fix` writes is removed after it,
  since the fixes of one report are alternatives, each tried on the untouched file;
- a Python snippet (the lines parse as Python): run with `python -c` in `cwd` by this interpreter (its
  torch), after checking that it names nothing it does not define or import. The few names a snippet may
  take from the user's own code (`model`: the model being loaded into) are given by the test as code
  that defines them, put before the snippet;
- any other line: a shell command, checked with `bash -n` (git, curl, hf reach the network).

Placeholders a fix prints where the doctor cannot know the value (YOUR_SCRIPT, REPO_ID) are replaced by
the test's values before a Python snippet runs; a snippet with a placeholder the test did not give fails.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PLACEHOLDER = re.compile(r"\b(?:YOUR_[A-Z_]+|REPO_ID)\b")
REPORTING = ("inspect", "check", "explain", "triage")  # exit 1 = "found problems", not a failed command


@dataclass
class FixRun:
    code: str  # the finding's
    when: str  # the fix's label
    kind: str  # python, cudadoctor or shell
    commands: list[str]
    ok: bool
    output: str

    def __str__(self) -> str:
        lines = "\n    ".join(self.commands)
        return f"{self.code} {self.when!r} ({self.kind}): {'ok' if self.ok else 'FAILED'}\n    {lines}\n{self.output}"


def kind_of(commands: list[str]) -> str:
    if commands[0].startswith("cudadoctor "):
        return "cudadoctor"
    try:
        ast.parse("\n".join(commands))
    except SyntaxError:
        return "shell"
    return "python"


def free_names(source: str) -> set[str]:
    """Names a snippet reads that it never binds (assignment, import, def, with … as, for)."""
    tree = ast.parse(source)
    bound = set(dir(builtins))
    read = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read - bound


def _python(commands: list[str], cwd: Path, given: dict[str, str], placeholders: dict[str, str]) -> tuple[bool, str]:
    source = "\n".join(commands)
    for name, value in placeholders.items():
        source = re.sub(rf"\b{name}\b", value, source)
    left = sorted(set(PLACEHOLDER.findall(source)))
    if left:
        return False, f"a placeholder the test did not fill: {', '.join(left)}"
    free = free_names(source)
    unknown = sorted(free - set(given))
    if unknown:
        return False, f"uses {', '.join(unknown)} without defining or importing it"
    prelude = "\n".join(given[n] for n in sorted(free))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the user's interpreter, as it is
    p = subprocess.run(
        [sys.executable, "-c", f"{prelude}\n{source}"], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )
    return p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def _cudadoctor(command: str, run_cli: Callable[..., Any]) -> tuple[bool, str]:
    args = shlex.split(command)[1:]
    r = run_cli(*args, timeout=300)
    ok = r.code in ((0, 1) if set(args[:2]) & set(REPORTING) else (0,))
    if args[:2] == ["ckpt", "fix"] and "--out" in args:
        out = Path(args[args.index("--out") + 1])
        ok = ok and out.is_file()
        out.unlink(missing_ok=True)  # the next alternative starts from the same files
    return ok, f"exit {r.code}\n{r.stdout[-2000:]}{r.stderr[-1000:]}"


def _shell(commands: list[str]) -> tuple[bool, str]:
    p = subprocess.run(["bash", "-n"], input="\n".join(commands), capture_output=True, text=True, timeout=30)
    return p.returncode == 0, p.stderr


def run_fixes(
    report: dict,
    run_cli: Callable[..., Any],
    cwd: Path,
    given: dict[str, str] | None = None,
    placeholders: dict[str, str] | None = None,
) -> list[FixRun]:
    """Run every fix of every finding of a JSON report; fail the test, naming each fix that failed."""
    runs: list[FixRun] = []
    for finding in report["findings"]:
        for fx in finding.get("fix") or []:
            commands = list(fx["commands"])
            if not commands:
                continue
            kind = kind_of(commands)
            if kind == "python":
                ok, output = _python(commands, cwd, given or {}, placeholders or {})
            elif kind == "cudadoctor":
                results = [_cudadoctor(c, run_cli) for c in commands]
                ok, output = all(r[0] for r in results), "\n".join(r[1] for r in results)
            else:
                ok, output = _shell(commands)
            runs.append(FixRun(finding["code"], fx["when"], kind, commands, ok, output))
    failed = [r for r in runs if not r.ok]
    assert not failed, "fixes that fail as printed:\n" + "\n".join(map(str, failed))
    return runs
