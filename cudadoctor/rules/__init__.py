"""Rules: pure functions from facts to findings, in the order their sections print. Importing the package
fills the catalogue with every code, also those of the commands with their own evaluate (ckpt, fit, fleet,
watch); `evaluate` is check's (rules/check.py)."""

from __future__ import annotations

from cudadoctor.rules import (  # noqa: F401  (imported for the catalogue)
    ckpt,
    fit,
    fleet,
    watch,
)
from cudadoctor.rules.catalogue import CATALOGUE, SECTIONS
from cudadoctor.rules.check import evaluate
from cudadoctor.rules.requirements import Requirements

__all__ = [
    "CATALOGUE",
    "SECTIONS",
    "Requirements",
    "evaluate",
]
