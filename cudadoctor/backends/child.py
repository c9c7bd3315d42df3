"""Run a child process with a time bound; a hung child is killed with everything it started."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Children run in their own session (so a hang can be killed with everything it started), which also
# keeps Ctrl-C from reaching them: whatever is still running when the doctor exits is killed here.
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _kill_leftovers() -> None:
    with _LIVE_LOCK:
        for proc in list(_LIVE):
            _kill_tree(proc)


@dataclass
class ChildResult:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str | None = None  # could not start at all

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.error is None


def run_child(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> ChildResult:
    popen_kw: dict = {}
    if sys.platform == "win32":
        popen_kw["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        popen_kw["start_new_session"] = True
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            text=True,
            errors="replace",
            **popen_kw,
        )
    except OSError as exc:
        return ChildResult(None, "", "", error=f"{argv[0]}: {exc.strerror or exc}")
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        return ChildResult(proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        try:
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            out, err = "", ""
        return ChildResult(None, out or "", err or "", timed_out=True)
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        if sys.platform == "win32":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
