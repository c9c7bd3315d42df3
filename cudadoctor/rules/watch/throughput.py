"""What the GPU waited for: nothing (it is the bottleneck, CD710), the input pipeline (GPU utilisation low or
swinging 0–95 % while the main process or the DataLoader workers are saturated, CD701), host-device copies
(PCIe busy while the GPU idles, CD704), or the program itself (nothing busy at all, CD714)."""

from __future__ import annotations

import shlex

from cudadoctor.facts.watch import Timeline
from cudadoctor.knowledge.pcie import link_gbps
from cudadoctor.model import Finding, Fix, Table, msg, msg_n
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.watch import stats
from cudadoctor.rules.watch.entries import COPIES_DOMINATE, GPU_BOUND, INPUT_BOUND, WAITING
from cudadoctor.rules.watch.stats import (
    BUSY_SHARE,
    IDLE_UTIL,
    LOW_UTIL,
    MACHINE_BUSY,
    MIN_SAMPLES,
    CpuSide,
    cpu_side,
    pct,
    suggest_workers,
)

PEAK_UTIL = 70  # a sample at or above this is a burst
SWING_IDLE_SHARE = 0.25  # idle dips in at least this share of samples ...
SWING_PEAK_SHARE = 0.15  # ... and bursts in at least this share: the 0, 20, 70, 95, 0 % pattern
GPU_BOUND_UTIL = 85.0  # mean utilisation at or above this: the GPU is the bottleneck, as it should be
PCIE_BUSY = 0.25  # rx+tx at or above this share of the link's one-direction bandwidth: a copy is running
PCIE_BUSY_SHARE = 0.30  # copies running in at least this share of samples while the GPU waits
WAITING_MAIN_CPU = 70.0  # a main process below this percent of a core, with the GPU idle, waits (CD714)


def input_bound(tl: Timeline, index: int) -> list[Finding]:
    pairs = stats.on_gpu(tl, index)
    util = stats.known(g.util for _, g in pairs)
    if len(util) < MIN_SAMPLES:
        return []
    mean = stats.mean(util)
    idle = stats.share(util, lambda v: v < IDLE_UTIL)
    peak = stats.share(util, lambda v: v >= PEAK_UTIL)
    swinging = idle >= SWING_IDLE_SHARE and peak >= SWING_PEAK_SHARE
    gpu = stats.gpu_label(tl, index)
    if mean >= GPU_BOUND_UTIL and not swinging:
        return [
            GPU_BOUND.finding(
                title=msg(
                    "{gpu} was busy {util} % of the time the command was on it: the GPU is the bottleneck",
                    gpu=gpu,
                    util=f"{mean:.0f}",
                )
            )
        ]
    if mean >= LOW_UTIL and not swinging:
        return []
    cpu = cpu_side(tl, [s for s, _ in pairs])
    main_bound = cpu.main_saturated >= BUSY_SHARE
    workers_bound = cpu.workers > 0 and cpu.workers_saturated >= BUSY_SHARE
    if not (main_bound or workers_bound):
        return _waiting(tl, index, mean, idle, cpu)
    pattern = (
        msg(
            "swung between idle and busy ({idle} % of samples below {low} %, {busy} % at {high} % or more)",
            idle=f"{idle * 100:.0f}",
            low=IDLE_UTIL,
            busy=f"{peak * 100:.0f}",
            high=PEAK_UTIL,
        )
        if swinging
        else msg("averaged {util} %", util=f"{mean:.0f}")
    )
    who = (
        msg("the main process at {cpu} of a core", cpu=pct(cpu.main_mean))
        if main_bound and not workers_bound
        else msg_n(
            "{n} DataLoader worker at {cpu} each",
            "{n} DataLoader workers at {cpu} each",
            cpu.workers,
            n=cpu.workers,
            cpu=pct(cpu.worker_mean),
        )
    )
    table = Table(
        ["GPU util mean", "idle samples", "main CPU", "workers", "per worker", "idle cores"],
        [
            [
                f"{mean:.0f} %",
                f"{idle * 100:.0f} %",
                pct(cpu.main_mean),
                str(cpu.workers),
                pct(cpu.worker_mean),
                "?" if cpu.free_cores is None else f"{cpu.free_cores:.1f}",
            ]
        ],
    )
    return [
        INPUT_BOUND.finding(
            title=msg(
                "The CPU cannot feed {gpu}: its utilisation {pattern} while {who}", gpu=gpu, pattern=pattern, who=who
            ),
            fix=_feeding_fixes(tl, cpu),
            tables=[table],
        )
    ]


def _feeding_fixes(tl: Timeline, cpu: CpuSide) -> list[Fix]:
    n = suggest_workers(cpu.workers, cpu.free_cores, tl.cpu_count)
    cores = (
        msg("{free} of {total} cores were idle on average", free=f"{cpu.free_cores:.1f}", total=tl.cpu_count)
        if cpu.free_cores is not None and tl.cpu_count
        else msg("the number of idle cores is unknown")
    )
    if n is not None:
        first = fix(
            msg("Load batches in {n} worker processes ({cores}), pinned, kept between epochs", n=n, cores=cores),
            f"DataLoader(dataset, batch_size=..., num_workers={n}, pin_memory=True,",
            "           persistent_workers=True, prefetch_factor=4)",
        )
    else:
        first = fix(
            msg("Every core is busy ({cores}): make each batch cheaper to prepare", cores=cores),
            "# decode and augment on the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI),",
            "# or preprocess once offline and load the results (resized images, tokenized text)",
        )
    return [
        first,
        fix("Copy the pinned batches without blocking the host", "inputs = inputs.to(device, non_blocking=True)"),
    ]


def _waiting(tl: Timeline, index: int, mean: float, idle: float, cpu: CpuSide) -> list[Finding]:
    """Low utilisation with the CPU side known and not busy, and no copy traffic to blame (CD704 says that):
    the time goes to waiting. Unknown CPU figures say nothing."""
    if cpu.main_mean is None or copies(tl, index):
        return []
    # mostly idle (not merely below the bar), and a main process that is clearly not busy: a steady 60 %
    # or a main process at 80 % of a core is not "a program that waits"
    if not (idle >= SWING_IDLE_SHARE or mean < IDLE_UTIL) or cpu.main_mean >= WAITING_MAIN_CPU:
        return []
    busy = stats.known(s.cpu_busy for s, _ in stats.on_gpu(tl, index))
    if busy and stats.mean(busy) >= MACHINE_BUSY:
        return []  # every core busy with something else: not a program that waits
    # a command that was run is profiled by running it again; a watched --pid may still be running
    if tl.command:
        profile = [f"py-spy record --idle -o profile.svg -- {shlex.join(tl.command)}"]
    else:
        pid = tl.pid if tl.pid is not None else "PID"
        profile = [f"py-spy dump --pid {pid}", f"py-spy record --idle -o profile.svg --pid {pid}"]
    return [
        WAITING.finding(
            title=msg(
                "{gpu} sat idle in {idle} % of samples while the command was on it (utilisation averaged "
                "{util} %), and the main process used {cpu} of a core meanwhile: the program waits",
                gpu=stats.gpu_label(tl, index),
                idle=f"{idle * 100:.0f}",
                util=f"{mean:.0f}",
                cpu=pct(cpu.main_mean),
            ),
            fix=[
                fix("See where the main process waits (py-spy shows idle frames with --idle)", *profile),
                fix(
                    "Load data in worker processes so reading overlaps with compute",
                    "DataLoader(dataset, batch_size=..., num_workers=4, pin_memory=True, persistent_workers=True)",
                ),
                fix(
                    "Avoid a synchronising call every step",
                    "if step % 100 == 0:  # log every N steps, not every step",
                    "    print(loss.item())",
                    lang="python",
                ),
            ],
        )
    ]


def copies(tl: Timeline, index: int) -> list[Finding]:
    info = stats.gpu_info(tl, index)
    link = link_gbps(info.pcie_gen_max, info.pcie_width_max) if info else None
    pairs = stats.on_gpu(tl, index)
    traffic = [(g.rx + g.tx, g.util) for _, g in pairs if g.rx is not None and g.tx is not None]
    if link is None or len(traffic) < MIN_SAMPLES:
        return []
    bps = link * 1e9
    busy = stats.share([t for t, _ in traffic], lambda v: v >= PCIE_BUSY * bps)
    util = stats.known(u for _, u in traffic)
    if busy < PCIE_BUSY_SHARE or not util or stats.mean(util) >= LOW_UTIL:
        return []
    peak = max(t for t, _ in traffic)
    return [
        COPIES_DOMINATE.finding(
            title=msg(
                "Copies dominate on {gpu}: PCIe busy in {busy} % of samples (up to {peak} GB/s of {link}) "
                "while utilisation averaged {util} %",
                gpu=stats.gpu_label(tl, index),
                busy=f"{busy * 100:.0f}",
                peak=f"{peak / 1e9:.1f}",
                link=f"{link:.1f}",
                util=f"{stats.mean(util):.0f}",
            ),
            fix=[
                fix(
                    "Pin the batches and copy them without blocking",
                    "DataLoader(dataset, ..., pin_memory=True)",
                    "inputs = inputs.to(device, non_blocking=True)",
                ),
                fix(
                    "Keep on the GPU what fits there: move a small dataset once, not every step",
                    "data = data.to(device)  # before the loop",
                ),
                fix(
                    "Avoid device-to-host copies in the loop",
                    "if step % 100 == 0:  # log every N steps, not every step",
                    "    print(loss.item())",
                    lang="python",
                ),
            ],
        )
    ]
