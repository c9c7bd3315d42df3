"""Training verdicts (`cudadoctor watch`): pure rules over a recorded Timeline, so each is tested on
hand-written samples without timing anything.

What the tutorials teach by eye, as rules: GPU utilisation low or jumping 0-95 % while the CPU side is
saturated means the input pipeline cannot feed the GPU (DataLoader num_workers, pin_memory,
persistent_workers, prefetch_factor); peak memory far below the card means a larger batch fits;
PCIe busy while the GPU idles means copies dominate (pinned memory, non_blocking=True); clock event
reasons name thermal and power throttling (NVML nvmlClocksEventReason* bits, nvml.h); a tree that
never appears in NVML's process list while its CPU is busy trains on the CPU.

- `entries`: the codes (CD700–CD714); `stats`: statistics over a timeline, and the shared thresholds;
- `gpu_use`: whether the command used a GPU at all; `throughput`: what the GPU waited for (input
  pipeline, copies, the program); `memory`: GPU memory and /dev/shm; `clocks`: throttling;
  `sharing`: a GPU shared with other processes while another is free.

Thresholds are module constants. A rule needs MIN_SAMPLES known values before it says anything:
knowing less never adds a warning.
"""

from __future__ import annotations

import shlex

from cudadoctor.facts.watch import Timeline
from cudadoctor.model import Finding, msg, msg_n
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.watch.clocks import throttling
from cudadoctor.rules.watch.entries import NO_GPU_DATA, TOO_SHORT
from cudadoctor.rules.watch.gpu_use import cpu_only, pids_hidden
from cudadoctor.rules.watch.memory import memory, shm
from cudadoctor.rules.watch.sharing import busy_gpu
from cudadoctor.rules.watch.stats import MIN_SAMPLES, used_gpus
from cudadoctor.rules.watch.throughput import copies, input_bound


def evaluate(tl: Timeline) -> list[Finding]:
    """Every verdict for one recorded timeline, in a stable order."""
    findings: list[Finding] = []
    if tl.nvml not in (None, "ok"):
        findings.append(
            NO_GPU_DATA.finding(
                title=msg("No GPU could be sampled (NVML: {state}): only the CPU side was watched", state=tl.nvml),
                fix=[fix("Find out why NVML cannot be used", "cudadoctor check")],
            )
        )
    if len(tl.samples) < MIN_SAMPLES:
        return [_too_short(tl), *findings]
    findings.extend(pids_hidden(tl))
    findings.extend(cpu_only(tl))
    per_gpu: dict[str, list[tuple[int, Finding]]] = {}
    for index in used_gpus(tl):
        for rule in (input_bound, memory, copies, throttling, busy_gpu):
            for f in rule(tl, index):
                per_gpu.setdefault(f.code, []).append((index, f))
    # one story: the same verdict on several GPUs (one per rank) is one finding naming them all
    for found in per_gpu.values():
        first = found[0][1]
        if len(found) > 1:
            also = ", ".join(str(i) for i, _ in found[1:])
            first.title = msg("{title} (also GPU {indices})", title=first.title, indices=also)
        findings.append(first)
    findings.extend(shm(tl))
    findings.sort(key=lambda f: -f.severity.rank)  # worst first, as every report orders a section
    return findings


def _too_short(tl: Timeline) -> Finding:
    n = len(tl.samples)
    command = shlex.join(tl.command) if tl.command else "COMMAND"
    return TOO_SHORT.finding(
        title=msg("Too few samples to judge the run ({n} in {seconds} s)", n=n, seconds=f"{tl.duration:.1f}")
        if tl.duration is not None
        else msg_n(
            "Too few samples to judge the run ({n} sample)", "Too few samples to judge the run ({n} samples)", n, n=n
        ),
        # the command it watched, when it ran one
        fix=[fix("Watch a longer stretch, or sample more often", f"cudadoctor watch --interval 0.2 -- {command}")],
    )


__all__ = ["evaluate"]
