"""What `cudadoctor watch` records: one Sample per interval for a command's whole process tree, and the
Timeline that holds them with what was known once (the GPUs, the cores, how the command ended).

Unknown is not false: a value the sampler could not read is None (NVML does not support the query, the
process vanished between two reads, /dev/shm does not exist). Units: bytes, bytes per second, milliwatts,
percent; CPU is percent of ONE core (a process using four cores fully is 400).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Process roles, told apart by the sampler (backends/sampler.py).
MAIN = "main"  # the process that runs the training loop (the command itself, or the first Python under a launcher)
WORKER = "worker"  # a DataLoader worker (torch names them pt_data_worker) or another multiprocessing child of main
HELPER = "helper"  # multiprocessing's resource tracker, a forkserver: bookkeeping, not work
OTHER = "other"  # anything else in the tree (a shell, a launcher, a compiler it runs)


@dataclass
class GpuInfo:
    """What does not change while the command runs."""

    index: int
    name: str | None = None
    uuid: str | None = None
    memory_total: int | None = None
    power_limit_mw: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None


@dataclass
class GpuSample:
    index: int
    util: int | None = None  # percent of time a kernel ran, over NVML's own sampling period
    memory_used: int | None = None  # the whole GPU's, every process's
    tree_processes: int | None = None  # how many of the tree's processes NVML lists on this GPU
    tree_memory: int | None = None  # their memory; None when NVML does not say (WDDM) or the PIDs are hidden
    other_processes: int | None = None  # processes outside the tree on this GPU
    other_memory: int | None = None
    unseen_processes: int | None = None  # PIDs NVML lists that do not exist here (another PID namespace)
    rx: int | None = None  # PCIe bytes/s into the GPU (host to device)
    tx: int | None = None  # PCIe bytes/s out of the GPU (device to host)
    power_mw: int | None = None
    clocks_event: int | None = None  # NVML clock event (throttle) reasons bitmask


@dataclass
class ProcSample:
    pid: int
    role: str
    name: str | None = None
    cpu: float | None = None  # percent of one core since the previous sample (None on a process's first sample)
    rss: int | None = None
    # maps libcuda.so, the CUDA driver library every GPU program loads (/proc/PID/maps); None: unknown
    # (unreadable, another user's process, not Linux). False for every process: the tree used no GPU.
    libcuda: bool | None = None


@dataclass
class Sample:
    t: float  # seconds since the watch started
    gpus: list[GpuSample] = field(default_factory=list)
    procs: list[ProcSample] = field(default_factory=list)
    cpu_busy: float | None = None  # the whole machine: percent of ALL cores busy (0-100)
    load: float | None = None  # the 1-minute load average: runnable processes competing for the cores
    shm_used: int | None = None
    shm_total: int | None = None


@dataclass
class Timeline:
    command: list[str] | None = None  # what was run (None with --pid)
    pid: int | None = None  # the root of the watched tree
    interval: float = 1.0
    cpu_count: int | None = None
    nvml: str | None = None  # "ok", or why NVML could not be used (the NVML error name, BINDING_MISSING)
    gpus: list[GpuInfo] | None = None  # None: unknown (NVML not usable); []: NVML saw no GPU
    cuda_visible_devices: str | None = None  # as the command saw it, when known
    samples: list[Sample] = field(default_factory=list)
    duration: float | None = None
    exit_code: int | None = None  # the command's; a negative value -N: ended by signal N
    interrupted: bool = False  # Ctrl-C (or another signal) ended the watch
    sampler_cpu_seconds: float | None = None  # what the sampling itself cost this process
