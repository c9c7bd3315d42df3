"""Run a child process bounded in time AND in output; a hung or flooding child is killed with
everything it started. One helper reads the JSON line a child script prints after its marker.

Children run in their own session (so a hang can be killed with its whole process group), which also
keeps Ctrl-C from reaching them: whatever still runs when the doctor exits, or when a signal ends it
(cudadoctor/__main__.py), is killed here.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()
_FORKED: set[int] = set()  # children made with os.fork (the NVML query): killed the same way

MAX_STDOUT = 16 << 20  # a child's JSON facts are KBs; anything near this is a flood
MAX_STDERR = 64 << 10  # only the tail of stderr is kept (for the error line)


def kill_all() -> None:
    """Kill every child still running. Safe from a signal handler: it takes no lock."""
    for proc in list(_LIVE):
        _kill_tree(proc)
    for pid in list(_FORKED):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def remember_pid(pid: int) -> None:
    _FORKED.add(pid)


def forget_pid(pid: int) -> None:
    _FORKED.discard(pid)


atexit.register(kill_all)


@dataclass
class ChildResult:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str | None = None  # could not start at all
    flooded: bool = False  # printed more than its output bound: killed
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.flooded and self.error is None

    @property
    def signal(self) -> int | None:
        """The signal that ended the child (SIGSEGV = 11, …), if one did."""
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None

    def failure(self) -> str | None:
        """One line saying why the child did not succeed; None when it did."""
        if self.error:
            return self.error
        if self.timed_out:
            return "did not finish in time"
        if self.flooded:
            return f"printed more than {MAX_STDOUT >> 20} MiB and was stopped"
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"crashed ({name})"
        if self.returncode not in (0, None):
            tail = [ln for ln in self.stderr.strip().splitlines() if ln.strip()]
            return tail[-1].strip()[:300] if tail else f"exit code {self.returncode}"
        return None


class _Reader(threading.Thread):
    """Reads one pipe to the end, keeping at most `limit` bytes (the head, or the tail)."""

    def __init__(self, pipe: Any, limit: int, keep_tail: bool, on_overflow: Any) -> None:
        super().__init__(daemon=True)
        self.pipe, self.limit, self.keep_tail, self.on_overflow = pipe, limit, keep_tail, on_overflow
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False

    def run(self) -> None:
        try:
            while True:
                chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
                if not chunk:
                    break
                self.chunks.append(chunk)
                self.size += len(chunk)
                if self.size > self.limit:
                    if self.keep_tail:
                        data = b"".join(self.chunks)[-self.limit :]
                        self.chunks, self.size = [data], len(data)
                    elif not self.overflow:
                        self.overflow = True
                        self.on_overflow()
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        data = b"".join(self.chunks)
        if not self.keep_tail:
            data = data[: self.limit]
        return data.decode("utf-8", errors="replace")


def run_child(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    max_stdout: int = MAX_STDOUT,
) -> ChildResult:
    popen_kw: dict = {}
    if sys.platform == "win32":
        popen_kw["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        popen_kw["start_new_session"] = True
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            **popen_kw,
        )
    except (OSError, ValueError) as exc:
        return ChildResult(None, "", "", error=f"{argv[0]}: {getattr(exc, 'strerror', None) or exc}")
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        out = _Reader(proc.stdout, max_stdout, False, lambda: _kill_tree(proc))
        err = _Reader(proc.stderr, MAX_STDERR, True, None)
        out.start()
        err.start()
        if stdin is not None and proc.stdin is not None:
            # written from a thread: a child that never reads its input must not stop the clock
            threading.Thread(target=_feed, args=(proc.stdin, stdin.encode()), daemon=True).start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_tree(proc)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        # pipes close when the child (and anything it left holding them) is gone; bound the wait
        out.join(2.0)
        err.join(2.0)
        if out.is_alive() or err.is_alive():
            _kill_tree(proc)
        return ChildResult(
            proc.returncode if not timed_out else None,
            out.text(),
            err.text(),
            timed_out=timed_out,
            flooded=out.overflow,
            seconds=round(time.monotonic() - start, 3),
        )
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)


def _feed(pipe: Any, data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        if sys.platform == "win32":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def marked_json(result: ChildResult, mark: str) -> dict[str, Any] | None:
    """The last JSON object a child printed after `mark` at the start of a line (each child prints its
    facts so far before anything that may hang, so the last one is the most complete)."""
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(mark):
            try:
                data = json.loads(line[len(mark) :])
            except (json.JSONDecodeError, RecursionError):
                return None
            return data if isinstance(data, dict) else None
    return None
