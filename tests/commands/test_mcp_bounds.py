"""`cudadoctor mcp` runs each tool as a child doctor through the bounded runner (backends/child.run_child):
past its bound the child is stopped with SIGTERM first, so that the doctor's own handler ends the probes it
started in sessions of their own; a SIGKILL alone would leave them running."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from cudadoctor.commands.mcp import ToolFailed, run_cudadoctor

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and sh scripts")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def test_a_stopped_tool_leaves_no_probe_of_its_child_running(tmp_path: Path, monkeypatch):
    # an "interpreter" that hangs: `check --python` runs it as a probe child in a session of its own
    pidfile = tmp_path / "pid"
    hang = tmp_path / "python3"
    hang.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 60\n")
    hang.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    start = time.monotonic()
    try:
        with pytest.raises(ToolFailed, match=r"cudadoctor check did not finish within 3 s; it was stopped"):
            run_cudadoctor(["check", "--json", "--python", str(hang)], 3.0)
        assert time.monotonic() - start < 15
        deadline = time.monotonic() + 5
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the probe the stopped doctor started is still running"
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def test_a_tool_that_floods_is_stopped_and_says_so(monkeypatch):
    monkeypatch.setattr("cudadoctor.commands.mcp.MAX_OUTPUT", 100)
    with pytest.raises(ToolFailed, match="printed more than"):
        run_cudadoctor(["explain", "CD202"], 30.0)
