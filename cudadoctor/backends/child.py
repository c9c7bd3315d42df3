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
from collections.abc import Callable, Mapping, Sequence
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


def _start(argv: Sequence[str], env: Mapping[str, str] | None, stdin: bool) -> subprocess.Popen | str:
    """The started child (registered, so that kill_all ends it), or why it could not start."""
    popen_kw: dict = {}
    if sys.platform == "win32":
        popen_kw["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        popen_kw["start_new_session"] = True
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            **popen_kw,
        )
    except (OSError, ValueError) as exc:
        return f"{argv[0]}: {getattr(exc, 'strerror', None) or exc}"
    with _LIVE_LOCK:
        _LIVE.add(proc)
    return proc


def _reap(proc: subprocess.Popen, out: threading.Thread, err: threading.Thread, kill: bool = True) -> None:
    """End a child (and its process group) and its pipe readers, each wait bounded: pipes close when the
    child and anything it left holding them are gone, so readers still alive then mean a grandchild does."""
    if kill:
        _kill_tree(proc)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    out.join(2.0)
    err.join(2.0)
    if out.is_alive() or err.is_alive():
        _kill_tree(proc)


def run_child(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    max_stdout: int = MAX_STDOUT,
    grace: float = 0.0,
) -> ChildResult:
    """`grace`: on timeout, SIGTERM the child's process group first and give it this long to end, then
    SIGKILL. A child that is itself the doctor needs it: its probes run in sessions of their own, which only
    its SIGTERM handler (cudadoctor/__main__.py) kills; a SIGKILL would leave them running."""
    start = time.monotonic()
    proc = _start(argv, env, stdin is not None)
    if isinstance(proc, str):
        return ChildResult(None, "", "", error=proc)
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
            if grace > 0:
                _terminate(proc, grace)
            _reap(proc, out, err)
        else:
            _reap(proc, out, err, kill=False)
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


STAGE_GRACE = 5.0  # after its last stage a child only has to exit


class _StageReader(threading.Thread):
    """Reads a staged child's stdout as it comes (see run_stages): each line belongs to the stage
    running, and the stage's end line hands its lines on at once. At most `limit` bytes in all."""

    def __init__(self, pipe: Any, limit: int, names: list[str], end_mark: str, on_end: Any, on_overflow: Any) -> None:
        super().__init__(daemon=True)
        self.pipe, self.limit, self.names, self.end_mark = pipe, limit, names, end_mark
        self.on_end, self.on_overflow = on_end, on_overflow
        self.lock = threading.Lock()  # guards what follows; on_end is called holding it
        self.index = 0  # the stage running now
        self.since = time.monotonic()  # when it started
        self.lines: list[str] = []  # its output so far
        self.closed = False  # the runner has given every stage its result: later lines are dropped
        self.size = 0
        self.overflow = False

    def run(self) -> None:
        pending = bytearray()
        try:
            while True:
                chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
                if not chunk:
                    break
                self.size += len(chunk)
                if self.size > self.limit:
                    self.overflow = True
                    self.on_overflow()
                    return
                pending.extend(chunk)
                cut = pending.rfind(b"\n", max(0, len(pending) - len(chunk)))
                if cut >= 0:
                    for raw in bytes(pending[:cut]).split(b"\n"):
                        self._line(raw.decode("utf-8", errors="replace").rstrip("\r"))
                    del pending[: cut + 1]
        except (OSError, ValueError):
            pass
        if pending:
            self._line(bytes(pending).decode("utf-8", errors="replace"))

    def _line(self, text: str) -> None:
        with self.lock:
            if self.closed or self.index >= len(self.names):
                return
            name = self.names[self.index]
            end = self.end_mark + name
            if text != end and not text.startswith(end + " "):
                if text:  # the child starts each end line on a line of its own: that blank line is its
                    self.lines.append(text)
                return
            lines, self.lines = self.lines, []
            seconds = time.monotonic() - self.since
            self.index += 1
            self.since = time.monotonic()
            message = text[len(end) :].strip()
            # a stage that raised says why on its end line: a failed stage, the child goes on
            self.on_end(name, ChildResult(1 if message else 0, "\n".join(lines), message, seconds=round(seconds, 3)))


def run_stages(
    argv: Sequence[str],
    stages: Sequence[tuple[str, float]],
    end_mark: str,
    on_stage: Callable[[str, ChildResult], None],
    env: Mapping[str, str] | None = None,
    max_stdout: int = MAX_STDOUT,
) -> None:
    """Run ONE child that works through `stages` (name, seconds) in order and prints `end_mark + name`
    after each (with a one-line message when the stage failed; on stderr too, without the message).
    Each stage is bounded by its own seconds, counted from the end of the one before, and the output
    of all of them by max_stdout.

    on_stage(name, result) is called once per stage: as soon as its end line arrives, with the lines it
    printed (a result as from a child that ran only that stage). A stage that overruns, crashes or
    floods ends the child: it gets that failure with the lines it printed so far, exactly as a one-stage
    child would, and every later stage a result saying it did not run and why."""
    names = [name for name, _ in stages]
    bounds = [seconds for _, seconds in stages]
    proc = _start(argv, env, False)
    if isinstance(proc, str):
        for name in names:
            on_stage(name, ChildResult(None, "", "", error=proc))
        return
    try:
        out = _StageReader(proc.stdout, max_stdout, names, end_mark, on_stage, lambda: _kill_tree(proc))
        err = _Reader(proc.stderr, MAX_STDERR, True, None)
        out.start()
        err.start()
        overran = False
        while True:
            with out.lock:
                index, since = out.index, out.since
            remaining = since + (bounds[index] if index < len(bounds) else STAGE_GRACE) - time.monotonic()
            if remaining <= 0:
                overran = index < len(bounds)
                break
            try:
                proc.wait(timeout=remaining)
                break
            except subprocess.TimeoutExpired:
                continue  # the deadline moves on each time a stage ends
        # the stages are over: whatever the child left running (workers, compilers) goes too
        _reap(proc, out, err)
        with out.lock:
            out.closed = True
            index = out.index
            if index >= len(names):
                return
            name, text, seconds = names[index], "\n".join(out.lines), round(time.monotonic() - out.since, 3)
            code, stderr = proc.returncode, err.text()
            if end_mark in stderr:  # the child marks stage ends on stderr too: keep this stage's part
                stderr = stderr[stderr.rfind(end_mark) :].partition("\n")[2]
            if overran:
                res = ChildResult(None, text, stderr, timed_out=True, seconds=seconds)
                why = f"did not finish within {bounds[index]:g} s"
            else:
                res = ChildResult(code, text, stderr, flooded=out.overflow, seconds=seconds)
                if res.ok:  # exited cleanly in the middle of a stage
                    res.error = "the child exited before this check finished"
                why = f"failed: {res.failure()}"
            on_stage(name, res)
            for later in names[index + 1 :]:
                reason = f"not run: the {name} check before it, in the same process, {why}"
                on_stage(later, ChildResult(None, "", "", timed_out=overran, error=reason))
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)


def _feed(pipe: Any, data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _terminate(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM to the child's process group, then wait at most `grace` seconds for the child to exit."""
    try:
        if sys.platform == "win32":
            proc.terminate()
        else:
            os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError, OSError):
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
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
