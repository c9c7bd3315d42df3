"""Exit codes, the same in every command (docs/exit-codes.md). Scripts depend on them: never renumber."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudadoctor.model import Finding, ProbeOutcome, Severity

OK = 0  # healthy: nothing at or above the --fail-on severity
PROBLEMS = 1  # at least one finding at or above the --fail-on severity
USAGE = 2  # bad options or input (click's own usage errors use 2 as well)
INCOMPLETE = 3  # the doctor could not finish: a probe crashed or timed out, or an internal error
NOT_ENOUGH_GPUS = 4  # `gpus --pick N`: fewer than N GPUs qualify

DESCRIPTIONS = {
    OK: "Healthy: no finding at or above the --fail-on severity (default: error).",
    PROBLEMS: "Problems found: at least one finding at or above the --fail-on severity.",
    USAGE: "Usage error: unknown option or format, bad value, unreadable --from file, unwritable --output.",
    INCOMPLETE: "The doctor could not finish: a probe crashed or timed out (the report says which). "
    "Takes precedence over 1: an incomplete report cannot call a machine healthy.",
    NOT_ENOUGH_GPUS: "`cudadoctor gpus --pick N`: fewer than N GPUs meet the constraints.",
}


def decide(findings: Iterable[Finding], outcomes: Iterable[ProbeOutcome], fail_on: Severity | None = None) -> int:
    """The one place that turns a report into an exit code; fail_on defaults to errors."""
    from cudadoctor.model import Severity

    fail_on = fail_on or Severity.ERROR
    if any(o.failed for o in outcomes):
        return INCOMPLETE
    if any(f.severity.rank >= fail_on.rank for f in findings):
        return PROBLEMS
    return OK
