"""Children the doctor starts: bounded, and never left running after it exits."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.conftest import ROOT

CHILD_LEFT_RUNNING = """
import os, sys, threading, time
from cudadoctor.backends.child import run_child

marker = sys.argv[1]
argv = ["sh", "-c", f"echo $$ > {marker}; exec sleep 60"]
threading.Thread(target=run_child, args=(argv, 120), daemon=True).start()
while not os.path.exists(marker):
    time.sleep(0.05)
sys.exit(130)  # as after Ctrl-C
"""


def test_children_left_running_are_killed_at_exit(tmp_path):
    """Ctrl-C does not reach children in their own session: the doctor kills them when it exits."""
    import time

    marker = tmp_path / "pid"
    subprocess.run(
        [sys.executable, "-c", CHILD_LEFT_RUNNING, str(marker)], timeout=30, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    pid = int(marker.read_text())
    time.sleep(0.2)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            alive = fh.read().split()[2] != "Z"
    except FileNotFoundError:
        alive = False
    assert not alive


def test_input_to_a_child_that_never_reads_it_is_inside_the_bound():
    from cudadoctor.backends.child import run_child

    start = time.monotonic()
    res = run_child(["sleep", "8"], timeout=1, stdin="x" * 300_000)
    assert time.monotonic() - start < 5 and res.timed_out
