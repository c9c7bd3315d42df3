"""Rewrite imports of names that moved, so that every module takes them from where they now live.

- the shared data types left report.py for model.py: `from cudadoctor.report import Finding, build` becomes
  `from cudadoctor.model import Finding` and `from cudadoctor.report import build`;
- findings are translated where they are shown: `cudadoctor.locale.localize` is `cudadoctor.render.localize`;
- `from cudadoctor import __version__` reads `cudadoctor.version` (the package's __init__ leads to api.py).

Idempotent: a second run changes nothing. It only touches `from … import …` statements (report.py's own
re-export is left alone); run `ruff check --fix --select I` and `ruff format` on the files it names after.
Usage, from the repository root: `python tools/rewrite_model_imports.py [PATH ...]` (default: cudadoctor tests
benchmarks docs tools).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MODEL_NAMES = frozenset(
    {
        "COLUMN_MARKS",
        "FIX_LANGUAGES",
        "Finding",
        "Fix",
        "ProbeOutcome",
        "Severity",
        "Source",
        "Table",
        "language",
        "plural",
    }
)
MOVED_MODULES = {"cudadoctor.locale.localize": "cudadoctor.render.localize"}
# their re-exports of the moved names stay until every branch is rewritten
LEAVE_ALONE = ("cudadoctor/report.py", "cudadoctor/locale/localize.py", "cudadoctor/__init__.py")
DEFAULT_ROOTS = ("cudadoctor", "tests", "benchmarks", "docs", "tools")


def _names(aliases: list[ast.alias]) -> list[str]:
    return [a.name if a.asname is None else f"{a.name} as {a.asname}" for a in aliases]


def _statement(indent: str, module: str, names: list[str], comment: str) -> str:
    one = f"{indent}from {module} import {', '.join(names)}{comment}"
    if len(one) <= 120:
        return one
    body = "".join(f"{indent}    {n},\n" for n in names)
    return f"{indent}from {module} import ({comment}\n{body}{indent})"


def _replacement(node: ast.ImportFrom, lines: list[str]) -> str | None:
    """The text that replaces this statement, or None when it stays as it is."""
    first = lines[node.lineno - 1]
    indent = first[: node.col_offset]
    last = lines[node.end_lineno - 1]
    tail = last[node.end_col_offset :]
    comment = tail if tail.strip().startswith("#") else ""
    if node.module in MOVED_MODULES:
        return _statement(indent, MOVED_MODULES[node.module], _names(node.names), comment)
    if node.module == "cudadoctor" and [a.name for a in node.names] == ["__version__"]:
        return _statement(indent, "cudadoctor.version", _names(node.names), comment)
    if node.module != "cudadoctor.report":
        return None
    moved = [a for a in node.names if a.name in MODEL_NAMES]
    if not moved:
        return None
    kept = [a for a in node.names if a.name not in MODEL_NAMES]
    parts = [_statement(indent, "cudadoctor.model", _names(moved), comment)]
    if kept:
        parts.append(_statement(indent, "cudadoctor.report", _names(kept), comment))
    return "\n".join(parts)


def rewrite(text: str) -> str:
    tree = ast.parse(text)
    lines = text.splitlines()
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            new = _replacement(node, lines)
            if new is not None:
                edits.append((node.lineno, node.end_lineno, new))
    for start, end, new in sorted(edits, reverse=True):
        lines[start - 1 : end] = new.split("\n")
    out = "\n".join(lines)
    return out + "\n" if text.endswith("\n") else out


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path(r) for r in DEFAULT_ROOTS if Path(r).exists()]
    files = sorted({p for r in roots for p in ([r] if r.is_file() else r.rglob("*.py"))})
    skip = {Path(p).resolve() for p in LEAVE_ALONE} | {Path(__file__).resolve()}
    changed = []
    for path in files:
        if path.resolve() in skip:
            continue
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(str(path))
    print("\n".join(changed) if changed else "nothing to rewrite")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
