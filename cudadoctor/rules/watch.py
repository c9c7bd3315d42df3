"""Training verdicts (`cudadoctor watch`): pure rules over a recorded Timeline, so each is tested on
hand-written samples without timing anything.

What the tutorials teach by eye, as rules: GPU utilisation low or jumping 0-95 % while the CPU side is
saturated means the input pipeline cannot feed the GPU (DataLoader num_workers, pin_memory,
persistent_workers, prefetch_factor); peak memory far below the card means a larger batch fits;
PCIe busy while the GPU idles means copies dominate (pinned memory, non_blocking=True); clock event
reasons name thermal and power throttling (NVML nvmlClocksEventReason* bits, nvml.h); a tree that
never appears in NVML's process list while its CPU is busy trains on the CPU.

Thresholds are module constants. A rule needs MIN_SAMPLES known values before it says anything:
knowing less never adds a warning.
"""

from __future__ import annotations

import shlex

from cudadoctor.facts.watch import Sample, Timeline
from cudadoctor.knowledge.pcie import link_gbps
from cudadoctor.knowledge.units import format_size
from cudadoctor.model import Finding, Severity, Table, plural
from cudadoctor.rules import timeline_stats as stats
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.timeline_stats import (
    MACHINE_BUSY,
    CpuSide,
    cpu_side,
    starved_at,
    suggest_workers,
    used_gpus,
)

SECTION = "Training"

MIN_SAMPLES = 4  # fewer known values than this: too little to judge
BUSY_SHARE = 0.5  # "most of the time": share of samples
LOW_UTIL = 70.0  # mean GPU utilisation below this: the GPU waits
IDLE_UTIL = 30  # a sample below this is an idle dip
PEAK_UTIL = 70  # a sample at or above this is a burst
SWING_IDLE_SHARE = 0.25  # idle dips in at least this share of samples ...
SWING_PEAK_SHARE = 0.15  # ... and bursts in at least this share: the 0, 20, 70, 95, 0 % pattern
GPU_BOUND_UTIL = 85.0  # mean utilisation at or above this: the GPU is the bottleneck, as it should be
CPU_ONLY_CPU = 80.0  # percent of one core, mean over the run: a tree this busy is computing
UNDERUSED_SHARE = 0.40  # peak below this share of the card: a larger batch fits
NEAR_LIMIT_SHARE = 0.95  # the card's memory at or above this share: the next spike is an out-of-memory error
PCIE_BUSY = 0.25  # rx+tx at or above this share of the link's one-direction bandwidth: a copy is running
PCIE_BUSY_SHARE = 0.30  # copies running in at least this share of samples while the GPU waits
THROTTLE_SHARE = 0.20  # a clock event reason in at least this share of loaded samples
LOADED_UTIL = 20  # samples at or above this utilisation count as "under load" for throttling (not idle)
FREE_GPU_UTIL = 10  # another GPU this idle, with no process, is free
WAITING_MAIN_CPU = 70.0  # a main process below this percent of a core, with the GPU idle, waits (CD714)
SHM_FULL_SHARE = 0.90

# NVML clock event reasons (nvml.h, nvmlClocksEventReason*; the older name is ClocksThrottleReason)
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80

CPU_ONLY = entry(
    "CD700",
    "watch-trains-on-cpu",
    Severity.WARNING,
    SECTION,
    "The command never used a GPU while its CPU was busy",
    """No process of the command's tree ever ran on a GPU (NVML never listed one, or none of them loaded
    libcuda, the CUDA driver library every GPU program loads), while the tree kept the CPU busy: the
    training ran on the CPU. The usual causes: the model or the batches were never moved with
    `.to(device)`, the device was chosen as "cpu" (a CPU-only torch wheel makes
    `torch.cuda.is_available()` False), or CUDA_VISIBLE_DEVICES hides every GPU.""",
    fixes=(
        fix(
            "Move the model and every batch to the GPU",
            "model = model.to(device)",
            "inputs, targets = inputs.to(device), targets.to(device)",
        ),
        fix("Check that this torch can use the GPU", "cudadoctor check"),
    ),
)
INPUT_BOUND = entry(
    "CD701",
    "watch-input-bound",
    Severity.WARNING,
    SECTION,
    "The CPU cannot feed the GPU: the input pipeline is the bottleneck",
    """GPU utilisation stayed low or swung between idle and busy while the main process or the DataLoader
    workers were saturated: each step waits for the next batch. More workers (up to the free cores),
    pinned memory and workers that persist between epochs keep batches ready before the GPU asks.""",
    fixes=(
        fix(
            "More DataLoader workers (up to the idle cores), pinned, kept between epochs",
            "DataLoader(dataset, ..., num_workers=4, pin_memory=True, persistent_workers=True, prefetch_factor=4)",
        ),
    ),
)
MEMORY_UNDERUSED = entry(
    "CD702",
    "watch-memory-underused",
    Severity.INFO,
    SECTION,
    "GPU memory far below the card's: a larger batch fits",
    """The command's peak GPU memory was a small share of the card's. A larger batch uses the GPU's
    parallelism better and usually trains faster per sample; scale the learning rate with it. NVML shows
    what PyTorch's caching allocator reserved, which is at least what the tensors needed.""",
    fixes=(fix("Raise the batch size and watch again (scale the learning rate with it)", "batch_size *= 2"),),
)
MEMORY_NEAR_LIMIT = entry(
    "CD703",
    "watch-memory-near-limit",
    Severity.WARNING,
    SECTION,
    "GPU memory near the card's limit",
    """The GPU's memory was nearly full: the next larger batch, a longer sequence or fragmentation ends
    in `torch.OutOfMemoryError`, and a full allocator spends time freeing and retrying.""",
    fixes=(
        fix(
            "Lower the batch (accumulate gradients to keep the effective batch), compute in bfloat16",
            "batch_size //= 2",
            'with torch.autocast("cuda", dtype=torch.bfloat16):',
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        ),
    ),
)
COPIES_DOMINATE = entry(
    "CD704",
    "watch-copies-dominate",
    Severity.WARNING,
    SECTION,
    "Host-device copies dominate: PCIe busy while the GPU waits",
    """The PCIe link carried heavy traffic in much of the run while the GPU's utilisation stayed low: the
    GPU waits for copies. Copies from pageable memory go through a staging buffer and block the host;
    pinned memory with `non_blocking=True` overlaps them with compute, and data that fits on the GPU
    need not cross the bus every step.""",
    fixes=(
        fix(
            "Pin the batches and copy them without blocking",
            "DataLoader(dataset, ..., pin_memory=True)",
            "inputs = inputs.to(device, non_blocking=True)",
        ),
    ),
)
THERMAL = entry(
    "CD705",
    "watch-thermal-throttling",
    Severity.WARNING,
    SECTION,
    "The GPU slowed its clocks for heat",
    """NVML reported thermal slowdown (software or hardware) as a clock event reason while the GPU was
    under load: it ran below its clocks to cool down, so every step took longer.""",
    fixes=(
        fix(
            "See the temperatures and slowdown thresholds; improve cooling", "nvidia-smi -q -d TEMPERATURE,PERFORMANCE"
        ),
    ),
)
POWER_CAP = entry(
    "CD706",
    "watch-power-capped",
    Severity.INFO,
    SECTION,
    "The GPU ran at its power limit",
    """NVML reported the software power cap as a clock event reason under load: the GPU lowered its
    clocks to stay within its power limit. Common and harmless on a fully loaded card; a limit set below
    the card's default costs speed.""",
    fixes=(fix("Compare the limit with the default and the maximum", "nvidia-smi -q -d POWER"),),
)
HW_SLOW = entry(
    "CD707",
    "watch-hardware-slowdown",
    Severity.WARNING,
    SECTION,
    "Hardware slowdown: the board or the power supply cut the clocks",
    """NVML reported hardware slowdown or the power brake as a clock event reason: the board (or an external
    signal from the power supply) halved the clocks, typically for a failing or undersized power supply,
    a loose power cable or extreme temperature.""",
    fixes=(fix("See which slowdown is active; check the power supply and cables", "nvidia-smi -q -d PERFORMANCE"),),
)
BUSY_GPU = entry(
    "CD708",
    "watch-busy-gpu",
    Severity.WARNING,
    SECTION,
    "It trains on a GPU other processes use while another GPU is free",
    """Processes outside the command shared its GPU for much of the run, while another GPU had no process
    and idled: the command competes for compute and memory it need not share.""",
    fixes=(fix("Run on the freest GPU", 'eval "$(cudadoctor gpus --pick 1)"'),),
)
SHM_FULL = entry(
    "CD709",
    "watch-shm-full",
    Severity.WARNING,
    SECTION,
    "/dev/shm is nearly full",
    """DataLoader workers hand batches to the main process through shared memory (/dev/shm). When it
    fills, workers die with "Bus error" or "unable to write to file </torch_…>". Docker gives a
    container only 64 MB of /dev/shm unless told otherwise.""",
    fixes=(fix("Give the container more shared memory", "docker run --shm-size=8g …"),),
)
GPU_BOUND = entry(
    "CD710",
    "watch-gpu-bound",
    Severity.OK,
    SECTION,
    "The GPU was busy: it is the bottleneck, as it should be",
    """The GPU's utilisation stayed high: the input pipeline keeps up.""",
)
TOO_SHORT = entry(
    "CD711",
    "watch-too-short",
    Severity.INFO,
    SECTION,
    "Too few samples to judge the run",
    """The command ended (or was stopped) before enough samples were taken to say anything about it. Watch
    a longer stretch of training: a few hundred steps.""",
    fixes=(fix("Watch a longer stretch of training", "cudadoctor watch --interval 0.5 -- COMMAND"),),
)
NO_GPU_DATA = entry(
    "CD712",
    "watch-no-gpu-data",
    Severity.INFO,
    SECTION,
    "No GPU could be sampled: only the CPU side was watched",
    """NVML (the NVIDIA driver's management library) could not be used, so GPU utilisation, memory and
    PCIe traffic are unknown and no GPU verdict is given. `cudadoctor check` says why.""",
    fixes=(fix("Find out why NVML cannot be used", "cudadoctor check"),),
)
PIDS_HIDDEN = entry(
    "CD713",
    "watch-gpu-pids-hidden",
    Severity.INFO,
    SECTION,
    "NVML's process IDs are not this PID namespace: the command's own GPU use is unknown",
    """NVML lists processes with the host's process IDs; inside a container those do not match the
    container's, so the command's GPU memory cannot be told from other processes' and the verdicts that
    need it are skipped.""",
    fixes=(fix("Share the host's PID namespace, or watch from the host", "docker run --pid=host …"),),
)

WAITING = entry(
    "CD714",
    "watch-gpu-waits-on-nothing-busy",
    Severity.WARNING,
    SECTION,
    "The GPU sat idle while the CPU was not busy either: the program waits",
    """GPU utilisation stayed low while neither the main process nor any DataLoader worker was busy and
    the PCIe link was quiet: each step spends most of its time waiting, not computing. The usual causes
    are reading data from a slow disk or the network in the main process, `time.sleep` or polling, a lock
    or a queue shared with another process, and a synchronising call every step (`loss.item()`,
    `print(tensor)`, `torch.cuda.synchronize()`). A profile of the waiting process shows where the time
    goes.""",
    fixes=(
        fix(
            "See where the main process waits (py-spy shows idle frames with --idle)",
            "py-spy dump --pid PID",
            "py-spy record --idle -o profile.svg --pid PID",
        ),
    ),
)


def _pct(v: float | None) -> str:
    return "?" if v is None else f"{v:.0f} %"


# ---- the rules ------------------------------------------------------------------------------------------


def evaluate(tl: Timeline) -> list[Finding]:
    """Every verdict for one recorded timeline, in a stable order."""
    findings: list[Finding] = []
    if tl.nvml not in (None, "ok"):
        findings.append(
            NO_GPU_DATA.finding(
                title=f"No GPU could be sampled (NVML: {tl.nvml}): only the CPU side was watched",
                fix=[fix("Find out why NVML cannot be used", "cudadoctor check")],
            )
        )
    if len(tl.samples) < MIN_SAMPLES:
        return [_too_short(tl), *findings]
    findings.extend(_pids_hidden(tl))
    findings.extend(_cpu_only(tl))
    per_gpu: dict[str, list[tuple[int, Finding]]] = {}
    for index in used_gpus(tl):
        for rule in (_input_bound, _memory, _copies, _throttling, _busy_gpu):
            for f in rule(tl, index):
                per_gpu.setdefault(f.code, []).append((index, f))
    # one story: the same verdict on several GPUs (one per rank) is one finding naming them all
    for found in per_gpu.values():
        first = found[0][1]
        if len(found) > 1:
            first.title += f" (also GPU {', '.join(str(i) for i, _ in found[1:])})"
        findings.append(first)
    findings.extend(_shm(tl))
    findings.sort(key=lambda f: -f.severity.rank)  # worst first, as every report orders a section
    return findings


def _too_short(tl: Timeline) -> Finding:
    took = f"{tl.duration:.1f} s" if tl.duration is not None else "briefly"
    command = shlex.join(tl.command) if tl.command else "COMMAND"  # the command it watched, when it ran one
    return TOO_SHORT.finding(
        title=f"Too few samples to judge the run ({len(tl.samples)} in {took})",
        fix=[fix("Watch a longer stretch, or sample more often", f"cudadoctor watch --interval 0.2 -- {command}")],
    )


def _pids_hidden(tl: Timeline) -> list[Finding]:
    hidden = [
        g
        for s in tl.samples
        for g in s.gpus
        if g.unseen_processes and not g.tree_processes and g.tree_memory is None and g.unseen_processes > 0
    ]
    if not hidden or never_mapped_libcuda(tl):
        return []  # no process of the tree loaded libcuda: its GPU use is known, none (CD700 says so)
    return [
        PIDS_HIDDEN.finding(
            fix=[
                fix(
                    "Run the container in the host's PID namespace (Docker), or watch from the host",
                    "docker run --pid=host …",
                    "cudadoctor watch --pid PID   # on the host, with the host's PID of the training",
                )
            ]
        )
    ]


def never_mapped_libcuda(tl: Timeline) -> bool:
    """Every process of the tree, in every sample, known not to map libcuda (/proc/PID/maps): the tree
    never used a GPU, whatever NVML's PID namespace shows. One unknown process makes it unknown."""
    procs = [p for s in tl.samples for p in s.procs]
    return bool(procs) and all(p.libcuda is False for p in procs)


def _tree_visible(tl: Timeline) -> list[Sample]:
    """Samples where the tree's presence on every GPU is known: PIDs comparable and process list read, or
    no process of the tree ever loaded libcuda."""
    if never_mapped_libcuda(tl):
        return [s for s in tl.samples if s.procs]
    out = []
    for s in tl.samples:
        if not s.gpus:
            continue
        if all(g.tree_processes is not None and not g.unseen_processes for g in s.gpus):
            out.append(s)
    return out


def _cpu_only(tl: Timeline) -> list[Finding]:
    if not tl.gpus or used_gpus(tl):
        return []
    visible = _tree_visible(tl)
    if len(visible) < MIN_SAMPLES:
        return []
    tree = stats.known(stats.tree_cpu(s) for s in visible)
    limits = [starved_at(s, tl.cpu_count) for s in visible]
    starved = all(x is not None for x in limits) and stats.mean(tree) >= stats.mean(stats.known(limits))
    if len(tree) < MIN_SAMPLES or (stats.mean(tree) < CPU_ONLY_CPU and not starved):
        return []
    cvd = tl.cuda_visible_devices
    fixes = []
    here = []
    if never_mapped_libcuda(tl):
        here.append("No process of the command loaded libcuda (/proc/PID/maps).")
    if cvd is not None and cvd.strip() in ("", "-1", "none", "NoDevFiles"):
        here.append(
            f"Here CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU from the command although NVML sees {len(tl.gpus)}."
        )
        fixes.append(fix("Let the command see a GPU", "unset CUDA_VISIBLE_DEVICES"))
    why = " ".join([CPU_ONLY.explanation, *here]) if here else None
    fixes += [
        fix(
            "Move the model and every batch to the GPU (in the training script)",
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
            "model = model.to(device)",
            "inputs, targets = inputs.to(device), targets.to(device)",
        ),
        fix(
            "Check that this torch can use the GPU (False: a CPU-only wheel or a driver problem)",
            'python -c "import torch; print(torch.__version__, torch.cuda.is_available())"',
            "cudadoctor check",
        ),
    ]
    return [
        CPU_ONLY.finding(
            title=(
                f"The command never used a GPU while its CPU was busy ({stats.mean(tree):.0f} % of a core on "
                f"average, {plural(len(tl.gpus), 'GPU')} present)"
            ),
            why=why,
            fix=fixes,
        )
    ]


def _input_bound(tl: Timeline, index: int) -> list[Finding]:
    pairs = stats.on_gpu(tl, index)
    util = stats.known(g.util for _, g in pairs)
    if len(util) < MIN_SAMPLES:
        return []
    mean = stats.mean(util)
    idle = stats.share(util, lambda v: v < IDLE_UTIL)
    peak = stats.share(util, lambda v: v >= PEAK_UTIL)
    swinging = idle >= SWING_IDLE_SHARE and peak >= SWING_PEAK_SHARE
    if mean >= GPU_BOUND_UTIL and not swinging:
        return [
            GPU_BOUND.finding(
                title=f"{stats.gpu_label(tl, index)} was busy {mean:.0f} % of the time: the GPU is the bottleneck"
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
        f"swung between idle and busy ({idle * 100:.0f} % of samples below {IDLE_UTIL} %, {peak * 100:.0f} % at "
        f"{PEAK_UTIL} % or more)"
        if swinging
        else f"averaged {mean:.0f} %"
    )
    who = (
        f"the main process at {_pct(cpu.main_mean)} of a core"
        if main_bound and not workers_bound
        else f"{plural(cpu.workers, 'DataLoader worker')} at {_pct(cpu.worker_mean)} each"
    )
    n = suggest_workers(cpu.workers, cpu.free_cores, tl.cpu_count)
    cores = (
        f"{cpu.free_cores:.1f} of {tl.cpu_count} cores were idle on average"
        if cpu.free_cores is not None and tl.cpu_count
        else "the number of idle cores is unknown"
    )
    fixes = []
    if n is not None:
        fixes.append(
            fix(
                f"Load batches in {n} worker processes ({cores}), pinned, kept between epochs",
                f"DataLoader(dataset, batch_size=..., num_workers={n}, pin_memory=True,",
                "           persistent_workers=True, prefetch_factor=4)",
            )
        )
    else:
        fixes.append(
            fix(
                f"Every core is busy ({cores}): make each batch cheaper to prepare",
                "# decode and augment on the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI),",
                "# or preprocess once offline and load the results (resized images, tokenized text)",
            )
        )
    fixes.append(
        fix(
            "Copy the pinned batches without blocking the host",
            "inputs = inputs.to(device, non_blocking=True)",
        )
    )
    table = Table(
        ["GPU util mean", "idle samples", "main CPU", "workers", "per worker", "idle cores"],
        [
            [
                f"{mean:.0f} %",
                f"{idle * 100:.0f} %",
                _pct(cpu.main_mean),
                str(cpu.workers),
                _pct(cpu.worker_mean),
                "?" if cpu.free_cores is None else f"{cpu.free_cores:.1f}",
            ]
        ],
    )
    return [
        INPUT_BOUND.finding(
            title=f"The CPU cannot feed {stats.gpu_label(tl, index)}: its utilisation {pattern} while {who}",
            fix=fixes,
            tables=[table],
        )
    ]


def _waiting(tl: Timeline, index: int, mean: float, idle: float, cpu: CpuSide) -> list[Finding]:
    """Low utilisation with the CPU side known and not busy, and no copy traffic to blame (CD704 says that):
    the time goes to waiting. Unknown CPU figures say nothing."""
    if cpu.main_mean is None or _copies(tl, index):
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
            title=(
                f"{stats.gpu_label(tl, index)} sat idle in {idle * 100:.0f} % of samples "
                f"(utilisation averaged {mean:.0f} %) "
                f"while the main process used {_pct(cpu.main_mean)} of a core: the program waits"
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


def _memory(tl: Timeline, index: int) -> list[Finding]:
    info = stats.gpu_info(tl, index)
    total = info.memory_total if info else None
    pairs = stats.on_gpu(tl, index)
    if not total or len(pairs) < MIN_SAMPLES:
        return []
    used = stats.known(g.memory_used for _, g in pairs)
    tree = stats.known(g.tree_memory for _, g in pairs)
    if used and max(used) >= NEAR_LIMIT_SHARE * total:
        others = stats.known(g.other_memory for _, g in pairs)
        mine = f"the command's own peak {format_size(int(max(tree)))}" if tree else "the command's own share unknown"
        extra = f"; other processes held up to {format_size(int(max(others)))}" if others and max(others) > 0 else ""
        return [
            MEMORY_NEAR_LIMIT.finding(
                title=(
                    f"{stats.gpu_label(tl, index)} memory near its limit: {format_size(int(max(used)))} of "
                    f"{format_size(total)} ({mine}{extra})"
                ),
                fix=[
                    fix("Halve the batch, keeping the effective batch with gradient accumulation", "batch_size //= 2"),
                    fix(
                        "Compute in bfloat16 (half the activation memory on Ampere and newer)",
                        'with torch.autocast("cuda", dtype=torch.bfloat16):',
                        "    loss = loss_fn(model(inputs), targets)",
                    ),
                    fix(
                        "Trade compute for memory on deep models",
                        "torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)",
                    ),
                    fix(
                        "Let the allocator grow segments instead of fragmenting",
                        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                    ),
                ],
            )
        ]
    if len(tree) >= MIN_SAMPLES and 0 < max(tree) < UNDERUSED_SHARE * total:
        peak = max(tree)
        room = int(0.85 * total / peak)
        return [
            MEMORY_UNDERUSED.finding(
                title=(
                    f"{stats.gpu_label(tl, index)} memory far below the card's: peak {format_size(int(peak))} of "
                    f"{format_size(total)} ({peak / total * 100:.0f} %)"
                ),
                fix=[
                    fix(
                        f"Raise the batch size: memory for about {room}× the activations is free; double it and "
                        "watch again (scale the learning rate with it)",
                        "batch_size *= 2",
                    )
                ],
            )
        ]
    return []


def _copies(tl: Timeline, index: int) -> list[Finding]:
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
            title=(
                f"Copies dominate on {stats.gpu_label(tl, index)}: PCIe busy in {busy * 100:.0f} % of samples (up to "
                f"{peak / 1e9:.1f} GB/s of {link:.1f}) while utilisation averaged {stats.mean(util):.0f} %"
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


def _throttling(tl: Timeline, index: int) -> list[Finding]:
    loaded = [
        g.clocks_event
        for _, g in stats.on_gpu(tl, index)
        if g.clocks_event is not None and g.util is not None and g.util >= LOADED_UTIL
    ]
    if len(loaded) < MIN_SAMPLES:
        return []
    out = []
    label = stats.gpu_label(tl, index)

    def share(mask: int) -> float:
        return sum(1 for r in loaded if r & mask) / len(loaded)

    if (s := share(SW_THERMAL | HW_THERMAL)) >= THROTTLE_SHARE:
        out.append(
            THERMAL.finding(
                title=f"{label} slowed its clocks for heat in {s * 100:.0f} % of loaded samples",
                fix=[
                    fix("See the temperatures and the slowdown thresholds", "nvidia-smi -q -d TEMPERATURE,PERFORMANCE"),
                    fix(
                        "Improve cooling: airflow, fan curves, dust; in a closed case or a hot rack, space the cards",
                        "nvidia-smi --query-gpu=temperature.gpu,fan.speed,clocks.sm --format=csv -l 1",
                    ),
                ],
            )
        )
    if (s := share(HW_SLOWDOWN | HW_POWER_BRAKE)) >= THROTTLE_SHARE:
        out.append(
            HW_SLOW.finding(
                title=f"{label}: hardware slowdown in {s * 100:.0f} % of loaded samples",
                fix=[
                    fix("See which slowdown is active", "nvidia-smi -q -d PERFORMANCE"),
                    fix("Check the power supply and the GPU's power cables; check the temperature", "sudo dmesg"),
                ],
            )
        )
    if (s := share(SW_POWER_CAP)) >= THROTTLE_SHARE:
        limit = stats.gpu_info(tl, index)
        watts = f" of {limit.power_limit_mw / 1000:.0f} W" if limit and limit.power_limit_mw else ""
        out.append(
            POWER_CAP.finding(
                title=f"{label} ran at its power limit{watts} in {s * 100:.0f} % of loaded samples",
                fix=[
                    fix(
                        "Compare the limit with the card's default and maximum (raise it only within them)",
                        "nvidia-smi -q -d POWER",
                    )
                ],
            )
        )
    return out


def _busy_gpu(tl: Timeline, index: int) -> list[Finding]:
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
                title=(
                    f"It trains on {stats.gpu_label(tl, index)}, shared with other processes in "
                    f"{shared * 100:.0f} % of samples, while GPU {info.index} was free"
                ),
                fix=[
                    fix(
                        "Run on the freest GPU (gpus --pick chooses it by free memory and load)",
                        f'eval "$({pick})"',
                        command,
                    ),
                    fix(
                        f"Or name GPU {info.index} directly",
                        f"CUDA_VISIBLE_DEVICES={info.uuid or info.index} {command}",
                    ),
                ],
            )
        ]
    return []


def _size_arg(n: float) -> str:
    gib = max(1, int(-(-n // (1 << 30))))
    return f"{gib}GiB"


def _shm(tl: Timeline) -> list[Finding]:
    pairs = [(s.shm_used, s.shm_total) for s in tl.samples if s.shm_used is not None and s.shm_total]
    if not pairs:
        return []
    used, total = max(pairs, key=lambda p: p[0] / p[1])  # type: ignore[operator]
    assert used is not None and total is not None
    if used < SHM_FULL_SHARE * total:
        return []
    docker = total <= 256 << 20
    return [
        SHM_FULL.finding(
            title=f"/dev/shm was {used / total * 100:.0f} % full ({format_size(used)} of {format_size(total)})",
            why=SHM_FULL.explanation + (" This one is that small: a container's default." if docker else ""),
            fix=[
                fix(
                    "Give the container more shared memory (Docker; Kubernetes: an emptyDir with medium: Memory "
                    "mounted at /dev/shm)",
                    "docker run --shm-size=8g …",
                    "docker run --ipc=host …",
                ),
                fix(
                    "Or share tensors through files instead (slower, no /dev/shm limit)",
                    'torch.multiprocessing.set_sharing_strategy("file_system")',
                ),
            ],
        )
    ]


__all__ = ["evaluate", "suggest_workers", "used_gpus"]
