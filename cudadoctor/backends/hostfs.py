"""The host seam: every fact read from /proc, /sys, /dev, /etc, /lib/modules, /usr/lib goes through a
`Host`. Tests point `root` at a fake tree under a temp dir and pass a fake `run` for programs (dmesg,
modinfo); nothing monkeypatches module globals.

Reads are bounded in size and never block (O_NONBLOCK: a FIFO or a stuck device node in a fake or
real tree returns nothing instead of waiting). Nothing here needs root: what root would be needed
for is reported as unknown (None) by the callers.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cudadoctor.backends.child import ChildResult, run_child

READ_LIMIT = 1 << 20  # 1 MiB: far above any /proc or /sys file the doctor reads


def _default_run(argv: Sequence[str], timeout: float) -> ChildResult:
    return run_child(list(argv), timeout=timeout)


@dataclass
class Host:
    """One machine's file system and programs, seen from `root` ("/" on the real machine)."""

    root: str = "/"
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    run: Callable[[Sequence[str], float], ChildResult] = _default_run
    uid: int | None = None  # who asks: for "may this user open /dev/nvidia0"; None: this process
    groups: tuple[int, ...] | None = None
    kernel_release: str | None = None  # uname -r; None: this machine's
    which: Callable[[str], str | None] | None = None  # finds a program; None: shutil.which on PATH

    def path(self, p: str) -> str:
        """The real path of the host path `p` (absolute, as on the machine)."""
        if self.root in ("", "/"):
            return p
        return os.path.join(self.root, p.lstrip("/"))

    def read(self, p: str, limit: int = READ_LIMIT) -> str | None:
        data = self.read_bytes(p, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_bytes(self, p: str, limit: int = READ_LIMIT) -> bytes | None:
        try:
            fd = os.open(self.path(p), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return None
        try:
            if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
                return None  # never read a FIFO, a socket or a device node
            chunks, size = [], 0
            while size < limit:
                chunk = os.read(fd, min(65536, limit - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)

    def listdir(self, p: str) -> list[str] | None:
        """Sorted names, or None when the directory is missing or unreadable (unknown, not empty)."""
        try:
            return sorted(os.listdir(self.path(p)))
        except OSError:
            return None

    def exists(self, p: str) -> bool:
        return os.path.lexists(self.path(p))

    def readlink(self, p: str) -> str | None:
        try:
            return os.readlink(self.path(p))
        except OSError:
            return None

    def stat(self, p: str) -> os.stat_result | None:
        try:
            return os.stat(self.path(p))
        except OSError:
            return None

    def kernel(self) -> str | None:
        if self.kernel_release is not None:
            return self.kernel_release
        text = self.read("/proc/sys/kernel/osrelease")
        if text and text.strip():
            return text.strip()
        return os.uname().release if hasattr(os, "uname") and self.root in ("", "/") else None

    def may_open(self, st: os.stat_result, write: bool = True) -> bool:
        """Whether this user may open a file with this owner and mode (read, and write by default)."""
        uid = self.uid if self.uid is not None else (os.getuid() if hasattr(os, "getuid") else 0)
        if uid == 0:
            return True
        groups = self.groups if self.groups is not None else _own_groups()
        need_r, need_w = stat_mod.S_IRUSR, stat_mod.S_IWUSR
        if st.st_uid == uid:
            bits = st.st_mode >> 0
        elif st.st_gid in groups:
            bits = st.st_mode << 3
        else:
            bits = st.st_mode << 6
        return bool(bits & need_r) and (not write or bool(bits & need_w))

    def program(self, name: str) -> str | None:
        if self.which is not None:
            return self.which(name)
        import shutil

        return shutil.which(name, path=self.environ.get("PATH") or os.defpath)


def _own_groups() -> tuple[int, ...]:
    try:
        return (os.getgid(), *os.getgroups())
    except (AttributeError, OSError):
        return ()
