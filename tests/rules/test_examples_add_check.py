"""tools/add_check.py scaffolds a new check in a copy of the tree (the tree itself is left as it is): the
entry in the section's rule module, an example and its line in the examples' table, the snapshot
placeholder; the copy imports, the catalogue has the code, and the per-code test names what is left."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted((root / "cudadoctor").rglob("*.py")) + sorted((root / "tests" / "snapshots").glob("*")):
        h.update(p.read_bytes())
    return h.hexdigest()


def _copy(tmp: Path) -> Path:
    copy = tmp / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("cudadoctor", "tools", "tests"):
        shutil.copytree(ROOT / part, copy / part, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", copy)
    return copy


def _py(copy: Path, code: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, "-c", code], cwd=copy, env=env, capture_output=True, text=True, timeout=120)


def test_add_check_scaffolds_a_check_in_a_copy(tmp_path: Path) -> None:
    before = _digest(ROOT)
    copy = _copy(tmp_path)
    r = subprocess.run(
        [
            sys.executable,
            "tools/add_check.py",
            "CD158",
            "gpu-fan-stopped",
            "GPU health",
            "warning",
            "A GPU's fan stopped",
        ],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "cudadoctor/rules/health.py" in r.stdout and "tests/snapshots/CD158.txt" in r.stdout
    assert "snapshots.py --update CD158" in r.stdout and "Translate" in r.stdout
    assert _digest(ROOT) == before  # the tree itself is untouched

    check = _py(
        copy,
        "from cudadoctor.rules import CATALOGUE\n"
        "from cudadoctor.rules.examples import examples\n"
        "from cudadoctor.rules.examples.table import BY_CODE\n"
        "e = CATALOGUE['CD158']\n"
        "assert (e.name, e.section, e.severity.value) == ('gpu-fan-stopped', 'GPU health', 'warning'), e\n"
        "assert BY_CODE['CD158'] == ('cd158-example',) and 'cd158-example' in examples()\n"
        "codes = list(BY_CODE)\n"
        "assert codes == sorted(codes)\n"
        "print(len(examples()))",
    )
    assert check.returncode == 0, check.stderr
    assert (copy / "tests" / "snapshots" / "CD158.txt").read_text().startswith("CD158: placeholder")
    lint = subprocess.run(["ruff", "check", "cudadoctor"], cwd=copy, capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout

    # what is left shows as failures of the per-code test: the example does not raise it yet
    t = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/rules/test_examples.py", "-k", "CD158"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert t.returncode == 1 and "cd158-example" in t.stdout and "raises" in t.stdout, t.stdout[-2000:]


def test_add_check_refuses_a_code_that_exists(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    r = subprocess.run(
        [sys.executable, "tools/add_check.py", "CD101", "x-y", "Driver", "error", "x"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode != 0 and "not a new code" in r.stderr
