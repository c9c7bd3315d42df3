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


# --- every example's fixes (tests/rules/test_examples_fixes.py) --------------------------------------------
#
# An example is facts, not a machine: its `cudadoctor` lines run against a fake machine described from its
# facts (the GPUs NVML lists, or the error nvmlInit returns; libcuda there or not), the rest is checked by
# what it is: Python compiles, shell passes `bash -n`, PowerShell quotes close, YAML brackets close, and a
# torch install names a release and an index the wheel table knows for the machine's platform.

_SELECTION = re.compile(r"CUDA_VISIBLE_DEVICES=(\S+)")
_TORCH_REQ = re.compile(r"""(?<![\w-])['"]?torch(?:==([\w.+]+))?['"]?(?=\s|$)""")
_INDEX = re.compile(r"--(?:extra-)?index-url[ =](\S+)")


@dataclass
class Checked:
    example: str
    code: str
    when: str
    kind: str  # cudadoctor, python, shell, powershell, yaml, install, unchecked
    line: str
    error: str | None  # None: behaves as the fix says (or, for "unchecked", the reason)

    def __str__(self) -> str:
        return f"{self.example} {self.code} {self.when!r} [{self.kind}]\n    {self.line}\n    -> {self.error}"


def machine_description(facts: Any) -> tuple[str, bool]:
    """The fake NVML/libcuda description (tests/fakenvml) of an example's machine, and whether libcuda is
    there: the GPUs and processes NVML lists, or the error nvmlInit returns."""
    import pynvml

    d, c = facts.driver, facts.cuda_driver
    lines: list[str] = []
    if d is not None and d.init_status not in (None, "ok"):
        code = getattr(pynvml, f"NVML_ERROR_{d.init_status}", pynvml.NVML_ERROR_UNKNOWN)
        lines.append(f"init_error {code}")
    elif d is not None:
        lines += [f"driver {d.driver_version or '580.65.06'}", f"cuda {d.cuda_driver_version or 13000}"]
        for dev in d.devices:
            if dev.error:
                continue
            fields = [f'name="{dev.name or "NVIDIA A100-SXM4-80GB"}"', f"cc={dev.compute_capability or '8.0'}"]
            fields += [f"total={dev.memory_total}"] if dev.memory_total else []
            fields += [f"used={dev.memory_used}"] if dev.memory_used is not None else []
            fields += [f"uuid={dev.uuid}"] if dev.uuid else []
            fields += ["mig=1"] if dev.mig_enabled else []
            lines.append("device " + " ".join(fields))
            for p in dev.processes or []:
                lines.append(f"process gpu={dev.index} pid={p.pid} mem={p.used_memory or 0}")
            for m in dev.mig_instances or []:
                lines.append(f"mig gpu={dev.index} uuid={m.uuid} total={m.memory_total or 10 << 30}")
    if c is not None and c.init_result not in (None, 0):
        lines.append(f"cuda_init {c.init_result}")
    return "\n".join(lines) + "\n", not (c is not None and c.library_found is False)


def cudadoctor_lines(line: str) -> list[str]:
    """The `cudadoctor …` commands a shell line runs: the line itself, or inside `$(…)`."""
    inner = re.findall(r"\$\((cudadoctor [^)]*)\)", line)
    if inner:
        return inner
    return [line] if line.startswith("cudadoctor ") else []


def machine_env(facts: Any) -> dict[str, str]:
    return dict((facts.system.env or {}) if facts.system is not None else {})


def apply_env(line: str, env: dict[str, str]) -> None:
    """What a fix's earlier line does to the environment of the lines after it (`unset X`, `export X=Y`)."""
    words = shlex.split(line, comments=True)
    if words[:1] == ["unset"]:
        for name in words[1:]:
            env.pop(name, None)
    elif words[:1] == ["export"]:
        env.update(w.split("=", 1) for w in words[1:] if "=" in w)  # type: ignore[arg-type]


def run_cudadoctor(
    command: str, facts: Any, run_cli: Callable[..., Any], env: dict[str, str] | None = None
) -> str | None:
    """Run one `cudadoctor` line against the example's machine (in `env`: the machine's, as the fix's
    earlier lines left it); None when it behaves as the fix says: a report exits 0 or 1 (found problems),
    anything else 0; `gpus --pick N` selects N GPUs that exist."""
    args = shlex.split(command, comments=True)[1:]
    machine, libcuda = machine_description(facts)
    env = machine_env(facts) if env is None else env
    r = run_cli(*args, machine=machine, libcuda=libcuda, env=env, timeout=300)
    allowed = (0, 1) if set(args[:1]) & set(REPORTING) else (0,)
    if r.code not in allowed:
        return f"exit {r.code}, the fix expects {' or '.join(map(str, allowed))}: {(r.stdout + r.stderr)[-600:]}"
    if "--pick" in args:
        n = int(args[args.index("--pick") + 1])
        m = _SELECTION.search(r.stdout)
        chosen = m.group(1).strip("\"'").split(",") if m else []
        devices = [d for d in (facts.driver.devices if facts.driver else []) if not d.error]
        known = {str(i) for i in range(len(devices))} | {d.uuid for d in devices if d.uuid}
        known |= {x.uuid for d in devices for x in d.mig_instances or [] if x.uuid}
        if len(chosen) != n or not set(chosen) <= known:
            return f"--pick {n} selected {chosen or 'nothing'}, not {n} of {sorted(known)}: {r.stdout[-300:]}"
    return None


def check_python(lines: list[str]) -> str | None:
    try:
        compile("\n".join(lines), "<fix>", "exec")
    except SyntaxError as e:
        return f"does not compile: {e}"
    return None


def check_shell(lines: list[str]) -> str | None:
    p = subprocess.run(["bash", "-n"], input="\n".join(lines), capture_output=True, text=True, timeout=30)
    return None if p.returncode == 0 else p.stderr.strip()


def check_powershell(line: str) -> str | None:
    """Quotes close as PowerShell reads them: '…' ('' inside), "…" (`" or "" inside); no bash-isms."""
    quote = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote is None:
            if ch in "'\"":
                quote = ch
            elif ch == "`":
                i += 1
        elif ch == quote:
            if line[i + 1 : i + 2] == quote:
                i += 1
            else:
                quote = None
        elif ch == "`" and quote == '"':
            i += 1
        elif ch == "\\" and quote == '"' and line[i + 1 : i + 2] == '"':
            return "a \\\" inside double quotes ends the string in PowerShell (use `\" or '…')"
        i += 1
    if quote is not None:
        return f"an unclosed {quote} quote"
    if re.search(r"\$\(\w+ |\bexport \w+=|&&", line):
        return "a bash construct in a PowerShell line"
    return None


def check_yaml(lines: list[str]) -> str | None:
    """Flow-style YAML as the fixes write it: `key: value`, brackets that close."""
    for ln in lines:
        if not re.match(r"^\s*[\w.-]+:\s", ln):
            return f"not a `key: value` line: {ln}"
        depth = []
        for ch in ln:
            if ch in "[{":
                depth.append("]" if ch == "[" else "}")
            elif ch in "]}":
                if not depth or depth.pop() != ch:
                    return f"brackets do not match: {ln}"
        if depth:
            return f"an unclosed bracket: {ln}"
    return None


def check_install(line: str, machine: str | None, installed: str | None = None) -> str | None:
    """A torch install names a release and an index the wheel table (knowledge/wheels.py) knows to hold
    that release for this platform (None: not a torch install, or a good one). A pin of the torch that is
    `installed` keeps it (pip finds it satisfied), whatever index holds it."""
    from cudadoctor.knowledge import wheels

    if not re.search(r"\bpip3? install\b", line) or not _TORCH_REQ.search(line):
        return None
    version = _TORCH_REQ.search(line).group(1)  # type: ignore[union-attr]
    if version is None:
        return "installs torch without naming a release (pip picks whatever the index has newest)"
    if version == installed:
        return None
    release = wheels.release_of(version)
    m = _INDEX.search(line)
    local = version.partition("+")[2]
    if m is None:
        if local:
            return f"torch=={version} is not on PyPI (local versions are on download.pytorch.org): no --index-url"
        return None  # PyPI's own wheel of a release
    variant = m.group(1).strip("'\"").rstrip("/").rsplit("/", 1)[-1]
    if local and local != variant:
        return f"torch=={version} from the {variant} index"
    if variant == "cpu":
        return None if release in wheels.RELEASES else f"torch {release} is not in the wheel table"
    known = {v.name for v in wheels.variants(release or "", machine)}
    if variant not in known:
        return f"the wheel table has no torch {release} {variant} wheel for {machine or 'x86_64'} ({sorted(known)})"
    return None
