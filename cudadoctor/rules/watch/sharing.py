"""Sharing: the command trains on a GPU other processes use while another GPU is free (CD708)."""

from __future__ import annotations

import shlex

from cudadoctor.facts.watch import Timeline
from cudadoctor.model import Finding, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.watch import stats
from cudadoctor.rules.watch.entries import BUSY_GPU
from cudadoctor.rules.watch.stats import BUSY_SHARE, MIN_SAMPLES

FREE_GPU_UTIL = 10  # another GPU this idle, with no process, is free


def busy_gpu(tl: Timeline, index: int) -> list[Finding]:
    pairs = stats.on_gpu(tl, index)
    others = [g.other_processes for _, g in pairs if g.other_processes is not None and not g.unseen_processes]
    shared = stats.share(stats.known(others), lambda v: v > 0)
    if len(others) < MIN_SAMPLES or shared < BUSY_SHARE:
        return []
    peak_tree = max(stats.known(g.tree_memory for _, g in pairs), default=0.0)
    window = [s for s, _ in pairs]
    for info in tl.gpus or []:
        if info.index == index:
            continue
        gs = [g for s in window if (g := stats.gpu_sample(s, info.index)) is not None]
        known = [g for g in gs if g.util is not None and g.other_processes is not None and g.tree_processes is not None]
        if len(known) < MIN_SAMPLES:
            continue
        idle = sum(
            1 for g in known if (g.util or 0) <= FREE_GPU_UTIL and not g.other_processes and not g.tree_processes
        ) / len(known)
        used = stats.known(g.memory_used for g in known)
        room = (info.memory_total - max(used)) if info.memory_total is not None and used else None
        if idle < 0.9 or (room is not None and room < peak_tree):
            continue
        pick = "cudadoctor gpus --pick 1" + (f" --min-free {_size_arg(peak_tree * 1.2)}" if peak_tree else "")
        command = shlex.join(tl.command) if tl.command else "python train.py …"
        return [
            BUSY_GPU.finding(
                title=msg(
                    "It trains on {gpu}, shared with other processes in {share} % of samples, "
                    "while GPU {free} was free",
                    gpu=stats.gpu_label(tl, index),
                    share=f"{shared * 100:.0f}",
                    free=info.index,
                ),
                fix=[
                    fix(
                        "Run on the freest GPU (gpus --pick chooses it by free memory and load)",
                        f'eval "$({pick})"',
                        command,
                    ),
                    fix(
                        msg("Or name GPU {index} directly", index=info.index),
                        f"CUDA_VISIBLE_DEVICES={info.uuid or info.index} {command}",
                    ),
                ],
            )
        ]
    return []


def _size_arg(n: float) -> str:
    gib = max(1, int(-(-n // (1 << 30))))
    return f"{gib}GiB"
