"""Who a GPU process is: name, user, command line. Kept small: `cudadoctor gpus` imports it."""

from __future__ import annotations

import os
import sys

from cudadoctor.facts.nvml import GpuProcess


def identity() -> tuple[str | None, str | None]:
    """(host name, user name) of this process: the facts' system.hostname and .user, and what every
    command's --redact replaces."""
    import getpass
    import socket

    try:
        user: str | None = getpass.getuser()
    except Exception:  # no passwd entry in some containers
        user = None
    try:
        host: str | None = socket.gethostname() or None
    except OSError:
        host = None
    return host, user


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
    """Fill in name, user and command; a process that vanished or is hidden stays None (N/A).

    A process that holds memory on many GPUs is read once per snapshot (128 GPUs x 50 processes
    would otherwise read /proc 6,400 times)."""
    if not procs:
        return
    by_pid: dict[int, list[GpuProcess]] = {}
    for p in procs:
        by_pid.setdefault(p.pid, []).append(p)
    if sys.platform.startswith("linux") and os.path.isdir("/proc/self"):
        for same in by_pid.values():
            first = same[0]
            _describe_from_proc(first)
            for other in same[1:]:
                other.name, other.user, other.command = first.name, first.user, first.command
        return
    try:
        import psutil
    except ImportError:
        return
    for pid, same in by_pid.items():
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                name, user, command = proc.name(), proc.username(), " ".join(proc.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
        for p in same:
            p.name, p.user, p.command = name, user, command or name
