"""What many tests ask of findings, defined once: their codes, one (or all) by code, the commands of their
fixes. A finding is a `Finding` or its JSON form; a list of them may be a whole JSON report."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


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
