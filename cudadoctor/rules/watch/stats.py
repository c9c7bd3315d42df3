"""Statistics over a watch timeline: means and shares of known samples, the samples the tree spent on a
GPU, and the CPU side of a run (how busy the main process and the workers were, whether every core was
busy, how many idle cores could run more workers); and the thresholds several verdicts share.

A verdict needs MIN_SAMPLES known values before it says anything: knowing less never adds a warning."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cudadoctor.facts.watch import MAIN, WORKER, GpuInfo, GpuSample, Sample, Timeline

MIN_SAMPLES = 4  # fewer known values than this: too little to judge
BUSY_SHARE = 0.5  # "most of the time": share of samples
LOW_UTIL = 70.0  # mean GPU utilisation below this: the GPU waits
IDLE_UTIL = 30  # a sample below this is an idle dip

SATURATED_CPU = 85.0  # percent of one core: a Python process this busy cannot do more
MACHINE_BUSY = 90.0  # percent of all cores: every core busy, so ...
FAIR_SHARE = 0.6  # ... a process getting this much of its fair share of a core (cores / load) is CPU-limited
STARVED_FLOOR = 5.0  # but never one below this percent of a core


def known(values: Iterable[float | int | None]) -> list[float]:
    return [float(v) for v in values if v is not None]


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def share(values: list[float], pred: Callable[[float], bool]) -> float:
    return sum(1 for v in values if pred(v)) / len(values) if values else 0.0


def pct(v: float | None) -> str:
    return "?" if v is None else f"{v:.0f} %"


def gpu_sample(sample: Sample, index: int) -> GpuSample | None:
    return next((g for g in sample.gpus if g.index == index), None)


def gpu_info(tl: Timeline, index: int) -> GpuInfo | None:
    return next((g for g in tl.gpus or [] if g.index == index), None)


def gpu_label(tl: Timeline, index: int) -> str:
    info = gpu_info(tl, index)
    return f"GPU {index}" + (f" ({info.name})" if info and info.name else "")


def used_gpus(tl: Timeline) -> list[int]:
    """GPUs on which NVML listed a process of the tree at least once."""
    seen: set[int] = set()
    for s in tl.samples:
        for g in s.gpus:
            if g.tree_processes:
                seen.add(g.index)
    return sorted(seen)


def on_gpu(tl: Timeline, index: int) -> list[tuple[Sample, GpuSample]]:
    """The samples from the tree's first appearance on the GPU to its last."""
    pairs = [(s, g) for s in tl.samples if (g := gpu_sample(s, index)) is not None]
    present = [i for i, (_, g) in enumerate(pairs) if g.tree_processes]
    return pairs[present[0] : present[-1] + 1] if present else []


def cpu_of(sample: Sample, role: str) -> list[float]:
    return [p.cpu for p in sample.procs if p.role == role and p.cpu is not None]


def tree_cpu(sample: Sample) -> float | None:
    values = [p.cpu for p in sample.procs if p.cpu is not None]
    return sum(values) if values else None


@dataclass
class CpuSide:
    main_mean: float | None
    main_saturated: float  # share of samples
    workers: int  # most workers seen at once
    worker_mean: float | None  # mean per worker
    workers_saturated: float  # share of samples where the workers' mean was saturated
    free_cores: float | None  # mean idle cores of the machine


def starved_at(sample: Sample, cores: int | None) -> float | None:
    """The CPU percent at which a process counts as CPU-limited in this sample because every core was busy:
    most of its fair share (cores over runnable processes); None while the machine had idle cores."""
    if sample.cpu_busy is None or sample.cpu_busy < MACHINE_BUSY:
        return None
    fair = 100.0
    if cores and sample.load:
        fair = 100.0 * cores / max(sample.load, cores)
    return max(STARVED_FLOOR, FAIR_SHARE * fair)


def cpu_limited(cpu: float, starved: float | None) -> bool:
    """A process saturated its core, or got most of what a machine whose every core was busy could give."""
    return cpu >= SATURATED_CPU or (starved is not None and cpu >= starved)


def cpu_side(tl: Timeline, samples: list[Sample]) -> CpuSide:
    mains: list[float] = []
    main_limited: list[bool] = []
    worker_means: list[float] = []
    workers_limited: list[bool] = []
    workers = 0
    for s in samples:
        m = cpu_of(s, MAIN)
        if m:
            mains.append(max(m))
            main_limited.append(cpu_limited(max(m), starved_at(s, tl.cpu_count)))
        w = cpu_of(s, WORKER)
        workers = max(workers, sum(1 for p in s.procs if p.role == WORKER))
        if w:
            worker_means.append(mean(w))
            workers_limited.append(cpu_limited(mean(w), starved_at(s, tl.cpu_count)))
    busy = known(s.cpu_busy for s in samples)
    free = None
    if busy and tl.cpu_count:
        free = tl.cpu_count * (1 - mean(busy) / 100)
    return CpuSide(
        main_mean=mean(mains) if mains else None,
        main_saturated=share([1.0 if x else 0.0 for x in main_limited], lambda v: v > 0),
        workers=workers,
        worker_mean=mean(worker_means) if worker_means else None,
        workers_saturated=share([1.0 if x else 0.0 for x in workers_limited], lambda v: v > 0),
        free_cores=free,
    )


def suggest_workers(current: int, free_cores: float | None, cpu_count: int | None) -> int | None:
    """More workers only where idle cores can run them; None when the machine has no core to spare."""
    if free_cores is None:
        if not cpu_count:
            return None
        return max(current + 1, min(8, cpu_count // 2))
    spare = int(free_cores)
    if spare < 1:
        return None
    limit = (cpu_count - 1) if cpu_count else current + spare
    return max(current + 1, min(current + spare, limit, max(2 * current, 4)))
