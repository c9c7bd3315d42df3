"""Example `cudadoctor watch` timelines: a training run on an A100 (80 GiB, PCIe 4 x16, 16 cores), sampled
every half second, with the one thing that makes each story (a starved DataLoader, copies from pageable
memory, heat, a full /dev/shm, a container's PID namespace)."""

from __future__ import annotations

from cudadoctor.facts.watch import MAIN, WORKER, GpuInfo, GpuSample, ProcSample, Sample, Timeline
from cudadoctor.rules.watch import clocks

GiB = 1 << 30
# a GPU that swings between idle and busy: it waits for every batch
SWING = [0, 20, 70, 95, 0, 10, 90, 95, 0, 5, 80, 0]


def timeline(
    util: list[int | None],
    main: float | list[float | None] = 99.0,
    workers: tuple[float, ...] | list[float] = (),
    tree_mem: int | None = 30 * GiB,
    used: int | None = None,
    on_gpu: int | None = 1,
    rx: int | None = None,
    clocks: int | None = None,
    others: int | None = 0,
    cpu_busy: float | None = 20.0,
    shm: tuple[int, int] | None = None,
    second_gpu: bool = False,
    total: int = 80 * GiB,
    load: float | None = None,
    cpu_count: int | None = 16,
) -> Timeline:
    """`python train.py` on GPU 0 of an A100 box: one sample per value of `util` (percent, None: unread);
    `main` is the main process's CPU percent, one figure or one per sample. The watch tests build theirs
    here too."""
    n = len(util)
    mains = main if isinstance(main, list) else [main] * n
    gpus = [GpuInfo(0, name="NVIDIA A100", uuid="GPU-aaaa", memory_total=total, pcie_gen_max=4, pcie_width_max=16)]
    if second_gpu:
        gpus.append(GpuInfo(1, name="NVIDIA A100", uuid="GPU-bbbb", memory_total=total))
    samples = []
    for k, u in enumerate(util):
        g = [
            GpuSample(
                0,
                util=u,
                memory_used=used if used is not None else (tree_mem or 0) + (GiB if others else 0),
                tree_processes=on_gpu,
                tree_memory=tree_mem if on_gpu else (0 if on_gpu == 0 else None),
                other_processes=others,
                other_memory=GiB if others else 0,
                unseen_processes=0,
                rx=rx,
                tx=0 if rx is not None else None,
                clocks_event=clocks,
            )
        ]
        if second_gpu:
            g.append(GpuSample(1, util=0, memory_used=0, tree_processes=0, other_processes=0, unseen_processes=0))
        procs = [ProcSample(100, MAIN, "python", mains[k], 2 * GiB)]
        procs += [ProcSample(200 + w, WORKER, "pt_data_worker", c, GiB) for w, c in enumerate(workers)]
        sample = Sample(t=k * 0.5, gpus=g, procs=procs, cpu_busy=cpu_busy, load=load)
        if shm:
            sample.shm_used, sample.shm_total = shm
        samples.append(sample)
    return Timeline(
        command=["python", "train.py"],
        pid=100,
        interval=0.5,
        cpu_count=cpu_count,
        nvml="ok",
        gpus=gpus,
        samples=samples,
        duration=n * 0.5,
    )


def _no_nvml() -> Timeline:
    tl = timeline([None] * 6)
    tl.nvml, tl.gpus = "LIBRARY_NOT_FOUND", None
    for s in tl.samples:
        s.gpus = []
    return tl


def _hidden_pids() -> Timeline:
    """In a container without --pid=host: NVML lists the host's PIDs, none of them this tree's."""
    tl = timeline([50] * 8, main=380.0, on_gpu=0, others=1)
    for s in tl.samples:
        s.gpus[0].unseen_processes, s.gpus[0].tree_memory = 1, None
    return tl


def timelines() -> dict[str, Timeline]:
    return {
        # the model never moved to the GPU: four cores busy, nothing on the GPU
        "watch-trains-on-cpu": timeline([0] * 8, main=380.0, on_gpu=0, tree_mem=None),
        # num_workers=0: the main process decodes every batch while the GPU swings between idle and busy
        "watch-dataloader-starved": timeline(SWING, main=99.0),
        # a batch of 8 on an 80 GiB card
        "watch-small-batch": timeline([97] * 6, tree_mem=4 * GiB),
        # 79 of 80 GiB in use: the next longer sequence is out of memory
        "watch-near-oom": timeline([97] * 6, tree_mem=70 * GiB, used=79 * GiB, others=1),
        # batches copied from pageable memory every step
        "watch-pageable-copies": timeline([30] * 8, main=20.0, rx=12 * 10**9),
        # a workstation GPU whose fans cannot keep up
        "watch-thermal-slowdown": timeline([95] * 6, clocks=clocks.HW_THERMAL),
        # a card held at its power limit
        "watch-power-capped": timeline([95] * 6, clocks=clocks.SW_POWER_CAP),
        # the power supply's brake signal cut the clocks
        "watch-hardware-slowdown": timeline([95] * 6, clocks=clocks.HW_SLOWDOWN),
        # training on GPU 0, which someone else uses, while GPU 1 sits free
        "watch-shared-gpu-while-one-is-free": timeline([60] * 8, main=20.0, others=1, second_gpu=True),
        # Docker's 64 MB /dev/shm, nearly full of DataLoader batches
        "watch-shm-full": timeline([97] * 6, shm=(63 << 20, 64 << 20)),
        # the healthy case: the GPU is the bottleneck
        "watch-gpu-bound": timeline([97, 95, 99, 98, 96, 97], main=100.0),
        # a command that ended after one second
        "watch-too-short": timeline([0, 0]),
        # watch on a machine where NVML cannot be loaded
        "watch-no-nvml": _no_nvml(),
        # watch inside a container that does not share the host's PID namespace
        "watch-pid-namespace": _hidden_pids(),
        # the program waits on a lock or the network: neither the GPU nor the CPU is busy
        "watch-program-waits": timeline(SWING, main=5.0),
    }
