"""Findings about the doctor itself: a probe that crashed or ran out of time."""

from __future__ import annotations

from cudadoctor.report import Finding, ProbeOutcome, Severity
from cudadoctor.rules.catalogue import entry, fix

PROBE_CRASHED = entry(
    "CD001",
    "probe-crashed",
    Severity.ERROR,
    "Doctor",
    "A probe crashed",
    """A check raised an unexpected error, so the facts it collects are missing and the findings that
    depend on them could not be made. The rest of the report is still valid. Run again with -v to see
    the traceback and include it in a bug report.""",
)
PROBE_TIMEOUT = entry(
    "CD002",
    "probe-timeout",
    Severity.ERROR,
    "Doctor",
    "A probe did not finish in time",
    """A check was stopped at its time bound. For the driver and CUDA checks this usually means the
    NVIDIA driver itself hangs (a wedged GPU, a driver stuck after an Xid error): the kernel log says
    why. The rest of the report is still valid.""",
)

_HANG_HINTS = {
    "driver": "NVML did not answer: the NVIDIA kernel driver may be stuck.",
    "cuda_driver": "cuInit did not return: the NVIDIA kernel driver may be stuck.",
    "torch": "The torch child process did not finish: importing torch or initialising CUDA hangs.",
}


def evaluate(outcomes: list[ProbeOutcome], facts: object = None) -> list[Finding]:
    """CD001/CD002 for a probe that left no facts; a probe whose child hung or crashed after reporting
    some facts is told by its own rule (CD123, CD212, …), which knows what it means."""
    out = []
    for o in outcomes:
        if facts is not None and getattr(facts, o.name, None) is not None:
            continue
        if o.status == "crashed":
            out.append(
                PROBE_CRASHED.finding(
                    title=f"The {o.name} probe crashed: {o.error}",
                    fix=[fix("See the traceback", "cudadoctor check -v")],
                )
            )
        elif o.status == "timeout":
            hint = _HANG_HINTS.get(o.name, "")
            out.append(
                PROBE_TIMEOUT.finding(
                    title=f"The {o.name} probe {o.error}",
                    why=f"{hint} {PROBE_TIMEOUT.explanation}".strip(),
                    fix=[
                        fix(
                            "Look for driver errors (Xid) in the kernel log",
                            "sudo dmesg -T | grep -i -E 'NVRM|Xid'",
                            "nvidia-smi",
                        )
                    ],
                )
            )
    return out
