"""Who a GPU process is: name, user, command line. Kept small: `cudadoctor gpus` imports it."""

from __future__ import annotations

import os
import sys

from cudadoctor.facts.nvml import GpuProcess


def _describe_from_proc(p: GpuProcess) -> None:
    """Linux: read /proc directly, which is what psutil would do, without its ~7 ms import."""
    import pwd

    base = f"/proc/{p.pid}"
    try:
        with open(f"{base}/cmdline", "rb") as fh:
            argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        with open(f"{base}/comm", encoding="utf-8", errors="replace") as fh:
            p.name = fh.read().strip()
        with open(f"{base}/status", encoding="utf-8", errors="replace") as fh:
            uid = next((int(ln.split()[1]) for ln in fh if ln.startswith("Uid:")), None)
    except (OSError, ValueError):
        return  # exited, or in another PID namespace (NVML reports host PIDs in containers)
    p.command = " ".join(argv) or p.name
    if uid is not None:
        try:
            p.user = pwd.getpwuid(uid).pw_name
        except KeyError:
            p.user = str(uid)


def describe_processes(procs: list[GpuProcess]) -> None:
    """Fill in name, user and command; a process that vanished or is hidden stays None (N/A)."""
    if not procs:
        return
    if sys.platform.startswith("linux") and os.path.isdir("/proc/self"):
        for p in procs:
            _describe_from_proc(p)
        return
    try:
        import psutil
    except ImportError:
        return
    for p in procs:
        try:
            proc = psutil.Process(p.pid)
            with proc.oneshot():
                p.name = proc.name()
                p.user = proc.username()
                p.command = " ".join(proc.cmdline()) or p.name
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
