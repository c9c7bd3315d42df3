"""Findings about the probes themselves: a probe that crashed or ran out of time (CD001, CD002)."""

from __future__ import annotations

import re

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, Message, ProbeOutcome, Severity, msg
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.predicates import driver_with_gpu, joined

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
    """A check was stopped at its time bound: its own (`cudadoctor check --help` lists them) or the one
    --timeout gave every check. The finding says what was running, how long it had, and the likeliest
    reason: a bound shorter than the check's own (importing torch alone can take seconds), a program or
    file system that did not answer, or, for the driver, CUDA and torch checks on a machine with an
    NVIDIA GPU, a hung driver (a wedged GPU, an Xid error), which the kernel log shows. The rest of the
    report is still valid.""",
)

# what each probe was doing when its time ran out
_WHAT_RAN: dict[str, Message] = {
    "torch": msg("It was importing torch and initialising CUDA in a child process."),
    "driver": msg("It was querying the driver and every GPU through NVML."),
    "cuda_driver": msg("It was loading libcuda and calling cuInit in a child process."),
    "system": msg("It was reading the OS, /dev/shm and the environment."),
    "pci": msg("It was reading the PCI bus."),
    "toolkit": msg("It was looking for the CUDA toolkit (nvcc --version)."),
    "platform": msg("It was reading the kernel module, the device nodes and the kernel log (modinfo, dmesg)."),
    "bandwidth": msg("It was timing copies between host and GPU."),
    "smoke": msg("It was running the training smoke test."),
    "compile": msg("It was compiling a tiny function with torch.compile."),
}
_DRIVER_HANG: dict[str, Message] = {
    "driver": msg("NVML did not answer: the NVIDIA kernel driver may be stuck (a wedged GPU, an Xid error)."),
    "cuda_driver": msg("cuInit did not return: the NVIDIA kernel driver may be stuck (a wedged GPU, an Xid error)."),
    "torch": msg(
        "Importing torch or initialising CUDA hangs: the NVIDIA kernel driver may be stuck (a wedged GPU, "
        "an Xid error)."
    ),
}
_KERNEL_LOG = fix(
    "Look for driver errors (Xid) in the kernel log",
    "sudo dmesg -T | grep -i -E 'NVRM|Xid'",
    "nvidia-smi",
)


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
                    title=msg("The {probe} probe crashed: {error}", probe=o.name, error=o.error),
                    fix=[fix("See the traceback", "cudadoctor check -v")],
                )
            )
        elif o.status == "timeout":
            out.append(_timeout(o, facts))
    return out


def _timeout(o: ProbeOutcome, facts: object) -> Finding:
    """What ran, how long it had, and the likeliest reason given what the other probes found."""
    gpu = driver_with_gpu(facts) if isinstance(facts, Facts) else None
    ran = _WHAT_RAN.get(o.name)
    if o.name == "torch" and gpu is False:
        ran = msg("It was importing torch in a child process (no NVIDIA driver or GPU here: no CUDA to initialise).")
    why = [ran] if ran is not None else []
    fixes = []
    if o.bound is not None and o.default_bound is not None and o.bound < o.default_bound:
        why.append(
            msg(
                "The bound, {bound} s, is less than the {default} s this check gets by default: "
                "it was most likely still working, not stuck.",
                bound=f"{o.bound:g}",
                default=f"{o.default_bound:g}",
            )
        )
        fixes.append(
            fix(
                msg(
                    "Run it without --timeout, so that each check has its own bound ({default} s for this one)",
                    default=f"{o.default_bound:g}",
                ),
                "cudadoctor check" + _python_option(o),
            )
        )
    elif o.name in _DRIVER_HANG and gpu is not False:
        why.append(_DRIVER_HANG[o.name])
        fixes.append(_KERNEL_LOG)
    elif o.name == "torch":
        why.append(msg("Importing torch hangs or is very slow (a slow or network file system, many packages)."))
    else:
        why.append(msg("A program it ran or a file it read did not answer in time."))
    if not fixes:
        longer = 4 * (o.default_bound or o.bound or 15.0)
        fixes.append(
            fix(
                "See whether it finishes at all, given longer",
                f"cudadoctor check --only {o.name} --timeout {longer:g}" + _python_option(o),
            )
        )
    return PROBE_TIMEOUT.finding(title=_timed_out(o), why=joined(why, " "), fix=fixes)


def _timed_out(o: ProbeOutcome) -> Message:
    """ "The torch probe did not finish within 60 s" (probes.py words the error)."""
    within = re.fullmatch(r"did not finish (within|in) (\S+) s", o.error or "")
    if within:
        return msg(
            "The {probe} probe did not finish within {seconds} s"
            if within[1] == "within"
            else "The {probe} probe did not finish in {seconds} s",
            probe=o.name,
            seconds=within[2],
        )
    return msg("The {probe} probe {error}", probe=o.name, error=o.error)


def _python_option(o: ProbeOutcome) -> str:
    """` --python PATH` when the probe ran in another interpreter: a re-run without it checks another torch."""
    from cudadoctor.advice.shell import word

    return f" --python {word(o.python)}" if o.python else ""
