"""The sampler behind `cudadoctor watch`: per interval, NVML for every GPU (utilisation, memory, the
processes on it, PCIe throughput, power, clock event reasons) and psutil for the watched process tree
(CPU and memory of each process, the main process and DataLoader workers told apart), plus /dev/shm.

NVML stays initialised for the whole watch (one nvmlInit, one nvmlShutdown). Every NVML call goes through
the one guard (nvml_guard.Guard) with the SkipAfterError policy: an NVML error is a None value, never an
exception; a query a GPU does not support, or a function an old driver lacks, is not asked again; a GPU
that fell off the bus reads as unknown.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from cudadoctor.backends.nvml import preload_nvml
from cudadoctor.backends.nvml_guard import Guard, SkipAfterError, error_names, text
from cudadoctor.facts.watch import HELPER, MAIN, OTHER, WORKER, GpuInfo, GpuSample, ProcSample, Sample

_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "accelerate", "deepspeed")
KB = 1024  # NVML reports PCIe throughput in KB/s
MAPS_MOST = 8 << 20  # bytes of one process's /proc/PID/maps read at most (a CUDA process's are ~1 MB)
MAPS_PROCESSES = 256  # processes whose maps one sample reads; the rest of a larger tree stays unknown


class Nvml:
    """NVML for one watch: handles resolved once, every call guarded."""

    def __init__(self) -> None:
        self.nv: Any = None
        self.status: str | None = None
        self.handles: list[Any] = []
        self.policy = SkipAfterError()
        self.guard: Guard | None = None
        self.tree_pids: set[int] = set()  # the tree's processes NVML listed in the latest sample

    def open(self) -> list[GpuInfo] | None:
        try:
            import pynvml as nv
        except ImportError:
            self.status = "BINDING_MISSING"
            return None
        try:
            preload_nvml(nv)
            nv.nvmlInit()
        except nv.NVMLError as exc:
            self.status = error_names(nv).get(exc.value, f"CODE_{exc.value}")
            return None
        except Exception as exc:  # a broken library: still a value, not a crash
            self.status = type(exc).__name__
            return None
        self.nv, self.status = nv, "ok"
        self.guard = Guard(nv, self.policy)
        infos: list[GpuInfo] = []
        for i in range(self.call(-1, "nvmlDeviceGetCount") or 0):
            h = self.call(-1, "nvmlDeviceGetHandleByIndex", i)
            self.handles.append(h)
            info = GpuInfo(index=i)
            if h is None:
                self.policy.gone.add(i)
            else:
                name, uuid = self.call(i, "nvmlDeviceGetName", h), self.call(i, "nvmlDeviceGetUUID", h)
                info.name = text(name) if name is not None else None
                info.uuid = text(uuid) if uuid is not None else None
                mem = self.call(i, "nvmlDeviceGetMemoryInfo", h)
                info.memory_total = int(mem.total) if mem is not None else None
                info.power_limit_mw = self.call(i, "nvmlDeviceGetEnforcedPowerLimit", h)
                info.pcie_gen_max = self.call(i, "nvmlDeviceGetMaxPcieLinkGeneration", h)
                info.pcie_width_max = self.call(i, "nvmlDeviceGetMaxPcieLinkWidth", h)
            infos.append(info)
        return infos

    def close(self) -> None:
        if self.nv is not None:
            try:
                self.nv.nvmlShutdown()
            except Exception:
                pass
            self.nv, self.guard = None, None

    def call(self, device: int, fn_name: str, *args: Any) -> Any:
        """One guarded call for GPU `device` (-1: the system); None while NVML is not open."""
        return None if self.guard is None else self.guard.call(fn_name, *args, at=device)

    def first(self, device: int, names: tuple[str, ...], *args: Any) -> Any:
        """The newest of several versioned functions this driver answers."""
        return None if self.guard is None else self.guard.first(names, *args, at=device)

    def processes(self, device: int, h: Any) -> dict[int, int | None] | None:
        """pid -> GPU memory (None where NVML does not say) for compute and graphics processes."""
        found: dict[int, int | None] = {}
        answered = False
        for names in (
            ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"),
            ("nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"),
        ):
            procs = self.first(device, names, h)
            if procs is None:
                continue
            answered = True
            for p in procs:
                used = p.usedGpuMemory
                found.setdefault(int(p.pid), None if used is None else int(used))
        return found if answered else None

    def sample(self, tree: set[int]) -> list[GpuSample]:
        out = []
        self.tree_pids = set()
        for i, h in enumerate(self.handles):
            g = GpuSample(index=i)
            out.append(g)
            if h is None:
                continue
            util = self.call(i, "nvmlDeviceGetUtilizationRates", h)
            g.util = int(util.gpu) if util is not None else None
            mem = self.call(i, "nvmlDeviceGetMemoryInfo", h)
            g.memory_used = int(mem.used) if mem is not None else None
            procs = self.processes(i, h)
            if procs is not None:
                mine = {pid: m for pid, m in procs.items() if pid in tree}
                others = {pid: m for pid, m in procs.items() if pid not in tree}
                g.tree_processes, g.other_processes = len(mine), len(others)
                self.tree_pids |= set(mine)
                g.unseen_processes = sum(1 for pid in others if not _pid_exists(pid))
                if not (g.unseen_processes and not mine):
                    g.tree_memory = _total(mine.values())
                g.other_memory = _total(others.values())
            rx = self.call(i, "nvmlDeviceGetPcieThroughput", h, 1)  # NVML_PCIE_UTIL_RX_BYTES: into the GPU
            tx = self.call(i, "nvmlDeviceGetPcieThroughput", h, 0)  # NVML_PCIE_UTIL_TX_BYTES
            g.rx = None if rx is None else int(rx) * KB
            g.tx = None if tx is None else int(tx) * KB
            g.power_mw = self.call(i, "nvmlDeviceGetPowerUsage", h)
            g.clocks_event = self.first(
                i, ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"), h
            )
            if i in self.policy.gone:  # fell off the bus during this sample: nothing of it is known
                out[-1] = GpuSample(index=i)
        return out


def _total(values: Any) -> int | None:
    values = list(values)
    if any(v is None for v in values):
        return None
    return sum(values)


def _pid_exists(pid: int) -> bool:
    try:
        import psutil

        return psutil.pid_exists(pid)
    except Exception:
        return True


def shm_usage(path: str = "/dev/shm") -> tuple[int | None, int | None]:
    """(used, total) bytes of the shared-memory filesystem DataLoader workers pass batches through."""
    if not hasattr(os, "statvfs"):
        return None, None
    try:
        st = os.statvfs(path)
    except OSError:
        return None, None
    total = st.f_blocks * st.f_frsize
    return (st.f_blocks - st.f_bfree) * st.f_frsize, total


def maps_libcuda(pid: int, most: int = MAPS_MOST) -> bool | None:
    """Whether the process maps libcuda.so (the CUDA driver library: a process that never loads it never
    used a GPU, whatever NVML's PID namespace shows). None when its maps cannot be read (another user's
    process, not Linux, gone) or hold more than `most` bytes without it."""
    read, tail = 0, b""
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            while read < most:
                chunk = fh.read(1 << 16)
                if not chunk:
                    return False if read else None  # a live process always maps something: empty is a zombie
                if b"/libcuda.so" in tail + chunk:
                    return True
                read, tail = read + len(chunk), chunk[-16:]
    except OSError:
        return None
    return None


class ProcessTree:
    """The watched process and its descendants, each one's CPU use since the previous sample."""

    def __init__(self, root: int) -> None:
        import psutil

        self.psutil = psutil
        self.root = root
        self.last: dict[int, tuple[float, float, Any]] = {}  # pid -> (wall, cpu seconds, Process)
        self.cmdlines: dict[int, tuple[str, ...]] = {}
        self.cache: dict[int, Any] = {}  # pid -> psutil.Process, kept between samples
        self.parents: dict[int, int | None] = {}  # from the tree walk, when it knew them
        self.libcuda: dict[int, Any] = {}  # pid -> Process known to map libcuda (it stays mapped)

    def members(self) -> list[Any]:
        """The root and its descendants. On Linux from /proc/PID/task/TID/children, which costs in
        proportion to the tree; psutil's children() reads every process on the machine instead."""
        ps = self.psutil
        pids = _tree_pids(self.root)
        if pids is None:
            try:
                root = ps.Process(self.root)
                procs = [root, *root.children(recursive=True)]
            except (ps.NoSuchProcess, ps.AccessDenied, ps.ZombieProcess):
                return []
            self.cache = {p.pid: p for p in procs}
            self.parents = {}
            return procs
        self.parents = pids
        out = []
        for pid in pids:
            proc = self.cache.get(pid)
            if proc is None:
                try:
                    proc = ps.Process(pid)
                except (ps.NoSuchProcess, ps.AccessDenied, ps.ZombieProcess):
                    continue
            out.append(proc)
        self.cache = {p.pid: p for p in out}
        return out

    def pids(self, procs: list[Any]) -> set[int]:
        return {p.pid for p in procs}

    def sample(self, procs: list[Any], gpu_pids: set[int]) -> list[ProcSample]:
        ps = self.psutil
        now = time.monotonic()
        out: list[ProcSample] = []
        parents: dict[int, int | None] = {}
        names: dict[int, str | None] = {}
        seen: set[int] = set()
        for p in procs:
            try:
                with p.oneshot():
                    times = p.cpu_times()
                    cpu_s = times.user + times.system
                    rss = p.memory_info().rss
                    name = p.name()
                    parents[p.pid] = self.parents[p.pid] if p.pid in self.parents else p.ppid()
                if p.pid not in self.cmdlines:
                    self.cmdlines[p.pid] = tuple(p.cmdline())
            except (ps.NoSuchProcess, ps.ZombieProcess):
                continue
            except (ps.AccessDenied, OSError):
                cpu_s, rss, name = None, None, None
            names[p.pid] = name
            seen.add(p.pid)
            cpu = None
            prev = self.last.get(p.pid)
            if cpu_s is not None:
                if prev is not None and prev[2] == p:  # the same process, not a reused PID
                    wall = now - prev[0]
                    cpu = max(0.0, (cpu_s - prev[1]) / wall * 100) if wall > 0 else None
                self.last[p.pid] = (now, cpu_s, p)
            libcuda = self._maps_libcuda(p) if len(out) < MAPS_PROCESSES else None
            if libcuda is None and _ended(p):
                continue  # it ended while being read: no sample, rather than one whose GPU use is unknown
            out.append(ProcSample(pid=p.pid, role=OTHER, name=name, cpu=cpu, rss=rss, libcuda=libcuda))
        for pid in list(self.last):
            if pid not in seen:
                del self.last[pid]
                self.cmdlines.pop(pid, None)
        for pid in list(self.libcuda):
            if pid not in seen:
                del self.libcuda[pid]
        roles = classify([s.pid for s in out], parents, names, self.cmdlines, gpu_pids=gpu_pids, root=self.root)
        for s in out:
            s.role = roles[s.pid]
        return out

    def _maps_libcuda(self, proc: Any) -> bool | None:
        if self.libcuda.get(proc.pid) == proc:  # the same process, not a reused PID: read once
            return True
        found = maps_libcuda(proc.pid)
        if found:
            self.libcuda[proc.pid] = proc
        return found


def _ended(proc: Any) -> bool:
    """The process is gone or a zombie (its maps read empty): it has stopped running."""
    import psutil

    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return True
    except (psutil.AccessDenied, OSError):
        return False


def _children(pid: int) -> list[int] | None:
    """Direct children from /proc/PID/task/*/children (Linux >= 3.5); None where the kernel lacks it."""
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except FileNotFoundError:
        return []  # the process is gone
    except OSError:
        return None
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"{base}/{tid}/children", "rb") as fh:
                out.extend(int(x) for x in fh.read().split())
        except FileNotFoundError:
            if tid == str(pid) and not os.path.exists(f"{base}/{tid}/stat"):
                continue  # the thread ended
            if tid == str(pid):
                return None  # no children file: CONFIG_PROC_CHILDREN is off
        except (OSError, ValueError):
            continue
    return out


def _tree_pids(root: int) -> dict[int, int | None] | None:
    """pid -> parent for the root and its descendants, root first."""
    if not sys.platform.startswith("linux"):
        return None
    if not os.path.exists(f"/proc/{root}"):
        return {}
    tree: dict[int, int | None] = {root: None}
    queue = [root]
    while queue and len(tree) < 4096:
        pid = queue.pop(0)
        kids = _children(pid)
        if kids is None:
            return None
        for k in kids:
            if k not in tree:
                tree[k] = pid
                queue.append(k)
    return tree


def classify(
    pids: list[int],
    parents: dict[int, int | None],
    names: dict[int, str | None],
    cmdlines: dict[int, tuple[str, ...]],
    gpu_pids: set[int] | None = None,
    root: int | None = None,
) -> dict[int, str]:
    """Tell the main process (or processes: one per rank) from DataLoader workers and helpers.

    torch names a DataLoader worker's thread `pt_data_worker` (torch/utils/data/_utils/worker.py), which
    is the process's name on Linux; a forked multiprocessing child shares its parent's command line and a
    spawned one carries `--multiprocessing-fork`. The main process holds the GPU; without one, it is the
    first Python process from the root that is not a launcher."""
    roles: dict[int, str] = {}
    order = sorted(pids, key=lambda pid: (_depth(pid, parents, root), pid))
    for pid in order:
        cmd = cmdlines.get(pid, ())
        text = " ".join(cmd)
        parent = parents.get(pid)
        if "resource_tracker" in text or "semaphore_tracker" in text or "multiprocessing.forkserver" in text:
            roles[pid] = HELPER
        elif names.get(pid) == "pt_data_worker" or "--multiprocessing-fork" in cmd:
            roles[pid] = WORKER
        elif parent in roles and cmd and cmd == cmdlines.get(parent) and roles[parent] in (MAIN, WORKER):
            roles[pid] = WORKER
        elif gpu_pids and pid in gpu_pids:
            roles[pid] = MAIN
        else:
            roles[pid] = OTHER
    if MAIN not in roles.values():
        for pid in order:
            if roles[pid] != OTHER:
                continue
            cmd = cmdlines.get(pid, ())
            exe = os.path.basename(cmd[0]) if cmd else (names.get(pid) or "")
            if any(launcher in " ".join(cmd[:3]) for launcher in _LAUNCHERS):
                continue
            if exe.startswith("python") or (pid == root and not exe.endswith("sh")):
                roles[pid] = MAIN
                break
    # children of a main process that share its command line are its workers (fork start method)
    for pid in order:
        parent = parents.get(pid)
        if roles[pid] == OTHER and parent in roles and roles[parent] == MAIN:
            if cmdlines.get(pid) and cmdlines.get(pid) == cmdlines.get(parent):
                roles[pid] = WORKER
    return roles


def _depth(pid: int, parents: dict[int, int | None], root: int | None) -> int:
    depth = 0
    while pid != root and pid in parents and depth < 64:
        parent = parents[pid]
        if parent is None:
            break
        pid, depth = parent, depth + 1
    return depth


class Sampler:
    """One object per watch: open(), then sample() every interval, then close()."""

    def __init__(self, root: int) -> None:
        import psutil

        self.psutil = psutil
        self.root = root
        self.nvml = Nvml()
        self.tree = ProcessTree(root)
        self.gpus: list[GpuInfo] | None = None
        self.start = time.monotonic()
        self.cpu_seconds = 0.0  # this thread's CPU in open() and sample(): what the sampling costs

    def open(self) -> None:
        c0 = time.thread_time()
        self.gpus = self.nvml.open()
        self.psutil.cpu_percent(None)  # primes the machine-wide counter
        self.start = time.monotonic()
        self.cpu_seconds += time.thread_time() - c0

    @property
    def nvml_status(self) -> str | None:
        return self.nvml.status

    def alive(self) -> bool:
        try:
            p = self.psutil.Process(self.root)
            return p.is_running() and p.status() != self.psutil.STATUS_ZOMBIE
        except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
            return False

    def sample(self) -> Sample:
        c0 = time.thread_time()
        procs = self.tree.members()
        tree = self.tree.pids(procs)
        gpus = self.nvml.sample(tree) if self.nvml.nv is not None else []
        gpu_pids = self.nvml.tree_pids if self.nvml.nv is not None else set()
        used, total = shm_usage()
        s = Sample(
            t=round(time.monotonic() - self.start, 3),
            gpus=gpus,
            procs=self.tree.sample(procs, gpu_pids),
            cpu_busy=self.psutil.cpu_percent(None),
            load=_load(),
            shm_used=used,
            shm_total=total,
        )
        self.cpu_seconds += time.thread_time() - c0
        return s

    def close(self) -> None:
        self.nvml.close()


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def cpu_count() -> int | None:
    try:
        return len(os.sched_getaffinity(0)) if sys.platform.startswith("linux") else os.cpu_count()
    except OSError:
        return os.cpu_count()
