"""What many tests share, defined once: the codes of findings, one (or all) by code, the commands of their
fixes (a finding is a `Finding` or its JSON form; a list of them may be a whole JSON report), and the doctor
run as a user runs it, in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.conftest import ROOT


def _findings(findings: Iterable[Any] | dict) -> list[Any]:
    return list(findings["findings"] if isinstance(findings, dict) else findings)


def _code(finding: Any) -> str:
    return finding["code"] if isinstance(finding, dict) else finding.code


def codes(findings: Iterable[Any] | dict) -> list[str]:
    """The codes in the order they were found."""
    return [_code(f) for f in _findings(findings)]


def by_code(findings: Iterable[Any] | dict, code: str | None = None) -> Any:
    """All findings keyed by code; with `code`, the one finding with that code (StopIteration if none)."""
    if code is None:
        return {_code(f): f for f in _findings(findings)}
    return next(f for f in _findings(findings) if _code(f) == code)


def commands(findings: Any) -> list[str]:
    """Every command of the fixes of one finding, or of a list of findings, in order."""
    many = findings if isinstance(findings, (list, tuple)) else [findings]
    return [c for f in many for r in f.fix for c in r.commands]


PY = sys.executable


def without_gpu_settings() -> dict[str, str]:
    """This process's environment less what would point a fake machine's run at another set of GPUs."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML"))}


def doctor(
    *args: str, env: dict | None = None, timeout: float = 60, cwd: Path | None = None, base: dict | None = None
) -> subprocess.CompletedProcess:
    e = {**(os.environ if base is None else base), "PYTHONPATH": str(ROOT), **(env or {})}
    encoding = e.get("PYTHONIOENCODING", "utf-8")
    return subprocess.run(
        [PY, "-m", "cudadoctor", *args],
        capture_output=True,
        encoding=encoding,
        errors="replace",
        env=e,
        timeout=timeout,
        cwd=cwd,
    )
