"""backends/sampler.py: a process of the watched tree that ends while a sample reads it."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from cudadoctor.backends import sampler
from cudadoctor.backends.sampler import ProcessTree


def test_a_process_that_ends_while_being_read_is_left_out_of_the_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kept with its libcuda unknown, it made the whole tree's GPU use unknown: 'watch' said CD713 instead of
    # CD700 on a loaded machine, where the last sample caught the command's process ending
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    read = sampler.maps_libcuda

    def ends_while_read(pid: int, most: int = sampler.MAPS_MOST) -> bool | None:
        if pid != child.pid:
            return read(pid, most)
        child.kill()
        child.wait()  # reaped: /proc/PID is gone, as after a process exits between two reads
        return read(pid, most)

    monkeypatch.setattr(sampler, "maps_libcuda", ends_while_read)
    try:
        tree = ProcessTree(os.getpid())
        procs = [psutil.Process(child.pid), psutil.Process(os.getpid())]
        samples = tree.sample(procs, set())
        assert [s.pid for s in samples] == [os.getpid()]
        assert samples[0].libcuda is False  # the live one is sampled, its maps read (no libcuda here)
    finally:
        child.kill()
        child.wait()
