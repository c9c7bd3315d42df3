"""Scaffold a new check (as ruff's scripts/add_rule.py): its catalogue entry in a rule module, an example
that is to raise it (rules/examples/), its line in the examples' table, and its snapshot placeholder; then
say what is left to do by hand.

    python tools/add_check.py CD150 gpu-fan-stopped "GPU health" warning "A GPU's fan stopped" \\
        --module cudadoctor/rules/health.py
    python tools/add_check.py ... --root /tmp/copy   # work on another checkout (the tests do)

The rule module defaults to the one holding the section's other codes. Nothing is written when the code,
the name or the section is not new/known.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# where a section's example goes: (module in rules/examples/, the function whose dict it joins, the stub's value)
_CHECK = (
    "Facts(system=ubuntu_system(), driver=driver_580([example_gpu()]), cuda_driver=libcuda_ok(), torch=venv_torch())"
)
_CHECK_IMPORTS = (
    "from cudadoctor.rules.examples.base import driver_580, example_gpu, ubuntu_system, venv_torch, libcuda_ok"
)
EXAMPLES: dict[str, tuple[str, str, str, str]] = {
    "Doctor": ("drivers", "examples", _CHECK, _CHECK_IMPORTS),
    "Driver": ("drivers", "examples", _CHECK, _CHECK_IMPORTS),
    "CUDA driver library": ("drivers", "examples", _CHECK, _CHECK_IMPORTS),
    "Toolkit": ("working", "examples", _CHECK, _CHECK_IMPORTS),
    "System": ("platforms", "examples", _CHECK, _CHECK_IMPORTS),
    "GPU health": ("gpus", "examples", _CHECK, _CHECK_IMPORTS),
    "Visible devices": ("gpus", "examples", _CHECK, _CHECK_IMPORTS),
    "Measurements": ("gpus", "examples", _CHECK, _CHECK_IMPORTS),
    "Multi-GPU": ("gpus", "examples", _CHECK, _CHECK_IMPORTS),
    "PyTorch": ("torch_stack", "examples", _CHECK, _CHECK_IMPORTS),
    "CUDA libraries": ("torch_stack", "examples", _CHECK, _CHECK_IMPORTS),
    "torch.compile": ("torch_stack", "examples", _CHECK, _CHECK_IMPORTS),
    "Paste": ("pastes", "examples", _CHECK, _CHECK_IMPORTS),
    "Requirements": (
        "gate",
        "gates",
        f"({_CHECK}, Requirements(require_gpus=1))",
        _CHECK_IMPORTS + "\nfrom cudadoctor.rules.requirements import Requirements",
    ),
    "Checkpoint": ("checkpoints", "checkpoints", '_weights("model.pt")', ""),
    "Training": ("training", "timelines", "timeline([97] * 6)", ""),
    "Fleet": ("fleets", "fleets", "_fleet(1)", ""),
}
SEVERITIES = ("error", "warning", "info", "ok")


def _constant(name: str) -> str:
    return re.sub(r"\W", "_", name).upper()


def _sections_of(path: Path) -> list[str]:
    """The section of every entry(...) a module declares (a literal, or a module constant such as S)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    consts = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "entry" and len(node.args) >= 4:
            arg = node.args[3]
            out.append(arg.value if isinstance(arg, ast.Constant) else consts.get(getattr(arg, "id", ""), ""))
    return out


def _module_for(root: Path, section: str) -> Path:
    """The rule module that holds most of the section's entries."""
    counts = {p: _sections_of(p).count(section) for p in sorted((root / "cudadoctor" / "rules").rglob("*.py"))}
    best = max(counts, key=lambda p: counts[p])
    if not counts[best]:
        raise SystemExit(f"no rule module holds the section {section!r}: name one with --module")
    return best


def _after_last_entry(text: str) -> int:
    """Where a new entry goes: after the last module-level `X = entry(...)`, else after the imports."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    end = 0
    for node in tree.body:
        call = node.value if isinstance(node, ast.Assign) else None
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "entry":
            end = node.end_lineno or end
        elif end == 0 and isinstance(node, (ast.Import, ast.ImportFrom)):
            end = -(node.end_lineno or 0)  # negative: no entry yet, after the imports
    return sum(len(ln) for ln in lines[: abs(end)])


def entry_stub(code: str, name: str, section: str, severity: str, summary: str) -> str:
    return (
        f"{_constant(name)} = entry(\n"
        f'    "{code}",\n'
        f'    "{name}",\n'
        f"    Severity.{severity.upper()},\n"
        f'    "{section}",\n'
        f"    {summary!r},\n"
        '    """TODO: what it means and why it matters, for the catalogue page (docs/findings.md).""",\n'
        ")\n"
    )


def write_entry(path: Path, code: str, name: str, section: str, severity: str, summary: str) -> None:
    text = path.read_text(encoding="utf-8")
    at = _after_last_entry(text)
    stub = entry_stub(code, name, section, severity, summary)
    head = ""
    if not re.search(r"^from cudadoctor\.rules\.catalogue import .*\bentry\b", text, re.M):
        head += "from cudadoctor.rules.catalogue import entry\n"
    if not re.search(r"^from cudadoctor\.model import .*\bSeverity\b", text, re.M):
        head += "from cudadoctor.model import Severity\n"
    text = text[:at] + stub + text[at:]
    if head:  # beside the module's own imports (ruff --fix sorts them)
        text = text.replace("from __future__ import annotations\n", "from __future__ import annotations\n\n" + head, 1)
    path.write_text(text, encoding="utf-8")


def write_example(root: Path, code: str, section: str) -> tuple[Path, str]:
    module, collector, value, imports = EXAMPLES[section]
    path = root / "cudadoctor" / "rules" / "examples" / f"{module}.py"
    text = path.read_text(encoding="utf-8")
    example = f"{code.lower()}-example"
    fn = f"_{code.lower()}"
    m = re.search(rf"^def {collector}\(.*?^    return \{{", text, re.M | re.S)
    if m is None:
        raise SystemExit(f"{path}: no `def {collector}(...)` that returns a dict literal")
    text = text[: m.end()] + f"**{fn}(), " + text[m.end() :]
    returns = "tuple[Facts, Requirements]" if collector == "gates" else "object"
    text += (
        f"\n\ndef {fn}() -> dict[str, {returns}]:\n"
        f'    """{code}: TODO the real-world story that raises it, with only the facts that tell it."""\n'
        f'    return {{"{example}": {value}}}\n'
    )
    if imports:
        text = text.replace(
            "from __future__ import annotations\n", "from __future__ import annotations\n\n" + imports + "\n", 1
        )
    path.write_text(text, encoding="utf-8")
    return path, example


def write_table(root: Path, code: str, example: str) -> Path:
    path = root / "cudadoctor" / "rules" / "examples" / "table.py"
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^BY_CODE: dict\[str, tuple\[str, \.\.\.\]\] = \{\n", text, re.M)
    if m is None:
        raise SystemExit(f"{path}: no BY_CODE table")
    at = m.end()
    for n in re.finditer(r'^    "(CD\d+)":', text[m.end() :], re.M):  # in code order
        if n.group(1) > code:
            break
        at = m.end() + text[m.end() :].index("\n", n.end()) + 1
        while not text[at:].startswith(('    "', "}")):  # the lines the formatter wrapped it into
            at = text.index("\n", at) + 1
    text = text[:at] + f'    "{code}": ("{example}",),\n' + text[at:]
    path.write_text(text, encoding="utf-8")
    return path


def write_snapshot(root: Path, code: str) -> Path:
    path = root / "tests" / "snapshots" / f"{code}.txt"
    path.write_text(
        f"{code}: placeholder. Once the rule raises it on its example: python tools/snapshots.py --update {code}\n",
        encoding="utf-8",
    )
    return path


def _known(root: Path) -> tuple[set[str], set[str], tuple[str, ...]]:
    sys.path.insert(0, str(root))
    from cudadoctor.rules import CATALOGUE, SECTIONS

    return set(CATALOGUE), {e.name for e in CATALOGUE.values()}, SECTIONS


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("code", help="CD followed by three digits, in its section's range")
    ap.add_argument("name", help="kebab-case slug, stable like the code")
    ap.add_argument("section", help="a section of rules/catalogue.py SECTIONS")
    ap.add_argument("severity", choices=SEVERITIES)
    ap.add_argument("summary", help="the catalogue's one-line title")
    ap.add_argument("--module", help="the rule module (default: the one holding the section's codes)")
    ap.add_argument("--root", default=str(ROOT), help="the checkout to write into")
    a = ap.parse_args(argv)
    root = Path(a.root).resolve()
    code = a.code.upper()
    codes, names, sections = _known(root)
    if not re.fullmatch(r"CD\d{3}", code) or code in codes:
        raise SystemExit(f"{code}: not a new code of the form CD123")
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", a.name) or a.name in names:
        raise SystemExit(f"{a.name}: not a new kebab-case name")
    if a.section not in sections or a.section not in EXAMPLES:
        raise SystemExit(f"{a.section!r}: not a section ({', '.join(sections)})")
    module = Path(a.module).resolve() if a.module else _module_for(root, a.section)
    if a.module and not module.is_relative_to(root):
        module = root / a.module
    write_entry(module, code, a.name, a.section, a.severity, a.summary)
    example_path, example = write_example(root, code, a.section)
    written = [module, example_path, write_table(root, code, example), write_snapshot(root, code)]
    for tool in (
        ["ruff", "format", "-q"],
        ["ruff", "check", "--fix", "-q", "--select", "I,F401"],
        ["ruff", "format", "-q"],
    ):
        subprocess.run([*tool, *map(str, written[:3])], cwd=root, check=False)
    rel = [str(p.relative_to(root)) for p in written]
    print("Wrote:\n  " + "\n  ".join(rel))
    print(
        f"""
Left to do:
  1. {rel[0]}: write the page (explanation) of {_constant(a.name)}, and raise it where the rule decides,
     title and fixes as templates:
       {_constant(a.name)}.finding(title=msg("… {{x}} …", x=...), fix=[fix(msg("…"), "cmd")])
     (in the module's evaluate, or a function it calls; a cause it follows from: entry(..., rests_on=...)).
  2. {rel[1]}: give {example!r} the facts of a real machine that raises {code} (as its neighbours).
  3. python tools/snapshots.py --update {code}    and review tests/snapshots/{code}.txt (English and zh_CN).
  4. Translate: /work/scratch/i18n.sh (or docs/translating.md "The workflow"), fill every empty msgstr,
     pybabel compile -d cudadoctor/locale -D cudadoctor; then the snapshot again (step 3).
  5. Docs: python -m cudadoctor.render.catalogue docs/findings.md
           python -m cudadoctor.locale.findings_doc docs/zh_CN/findings.md
  6. python -m pytest -q tests/rules/test_examples.py tests/rules/test_examples_fixes.py -k {code}"""
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
